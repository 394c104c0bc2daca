import { IDENTITY_SCOPES, SCOPE_TOKEN, type ScopeCatalogue, withImplied } from '@gatehouse/verifier/shared'
import { InvalidScopeError } from '../errors.js'

/** The plain words of OpenID Connect Core 5.4's scopes (docs/openid-connect.md): every Gatehouse offers them. */
const IDENTITY_DESCRIPTIONS: Readonly<Record<string, string>> = {
  openid: 'Know who you are (a stable identifier)',
  email: 'See your email address and whether it is verified',
  profile: 'See your display name',
}

export interface ScopeEntry {
  readonly name: string
  /** The plain words the consent page shows next to the scope. */
  readonly description: string
  /** What it implies directly, as the scopes file says (docs/operating/scopes.md). */
  readonly implies: readonly string[]
}

/**
 * The scopes this Gatehouse knows (docs/decisions/006-scopes.md, 018-operator-scopes.md): OpenID
 * Connect's three, then the API's own, from SCOPES_FILE or the built-in seed. Built once at
 * start-up (src/services.ts) and handed to everything that reads or shows a scope, so the
 * console, consent, discovery, the token endpoint and the command line read one list. The order
 * is canonical: equal sets have equal strings.
 */
export class ScopeVocabulary {
  readonly catalogue: ScopeCatalogue
  /** Every scope, in canonical order. */
  readonly entries: readonly ScopeEntry[]
  readonly names: readonly string[]
  readonly #byName: ReadonlyMap<string, ScopeEntry>

  constructor(catalogue: ScopeCatalogue) {
    this.catalogue = catalogue
    const identity = IDENTITY_SCOPES.map((name) => ({ name, description: IDENTITY_DESCRIPTIONS[name] ?? name, implies: [] }))
    this.entries = Object.freeze([...identity, ...catalogue.scopes])
    this.names = Object.freeze(this.entries.map((e) => e.name))
    this.#byName = new Map(this.entries.map((e) => [e.name, e]))
  }

  isKnown(name: string): boolean {
    return this.#byName.has(name)
  }

  /** The consent page's words for a scope; a scope no longer defined is shown by its name. */
  describe(name: string): string {
    return this.#byName.get(name)?.description ?? name
  }

  /** Known scopes in canonical order without duplicates; unknown ones are dropped. */
  normalize(scopes: Iterable<string>): string[] {
    const set = new Set(scopes)
    return this.names.filter((s) => set.has(s))
  }

  /**
   * Parses the `scope` parameter (RFC 6749 3.3: space-delimited) into what the grant will hold.
   * Absent or blank means the default scopes; with none, `scope` is required. Repeated tokens are
   * tolerated. Throws InvalidScopeError for an unknown scope or one the application may not
   * request. Under a scopes file the implied scopes are added here, when the grant is made, so a
   * later file never widens it (docs/decisions/018-operator-scopes.md).
   */
  parse(raw: string | undefined, allowed?: readonly string[]): string[] {
    const tokens = (raw ?? '').split(' ').filter((t) => t !== '')
    if (tokens.length === 0) tokens.push(...this.catalogue.defaultScopes)
    if (tokens.length === 0) throw new InvalidScopeError('The scope parameter is required')
    // RFC 6749 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). Anything else is malformed, and
    // is not repeated in the error: error_description allows only those characters and space.
    if (tokens.some((t) => !SCOPE_TOKEN.test(t))) {
      throw new InvalidScopeError(
        'The scope parameter is malformed: scopes are separated by spaces and use no quotes, backslashes or non-ASCII',
      )
    }
    const unknown = tokens.find((t) => !this.isKnown(t))
    if (unknown !== undefined) throw new InvalidScopeError(`Unknown scope: ${shown(unknown)}`)
    if (allowed) {
      const refused = tokens.find((t) => !allowed.includes(t))
      if (refused !== undefined) throw new InvalidScopeError(`This application may not request the scope ${refused}`)
    }
    return this.normalize(this.catalogue.impliedAt === 'grant' ? withImplied(this.catalogue, tokens) : tokens)
  }
}

const SHOWN_SCOPE_MAX = 40

function shown(token: string): string {
  return token.length > SHOWN_SCOPE_MAX ? `${token.slice(0, SHOWN_SCOPE_MAX)}...` : token
}

export function formatScope(scopes: readonly string[]): string {
  return scopes.join(' ')
}
