import { InvalidScopeError } from '../errors.js'

/*
 * The scopes Gatehouse knows (docs/decisions/006-scopes.md), in display order. Descriptions are the plain
 * words the consent page shows next to each requested scope.
 */
export const SCOPES = [
  'openid',
  'email',
  'profile',
  'read',
  'write',
  'write_members',
  'write_teams',
  'write_events',
  'write_users',
] as const
export type Scope = (typeof SCOPES)[number]

export const DEFAULT_SCOPE: Scope = 'read'

export const SCOPE_DESCRIPTIONS: Record<Scope, string> = {
  // OpenID Connect Core 5.4: what the identity scopes share (docs/openid-connect.md).
  openid: 'Know who you are (a stable identifier)',
  email: 'See your email address and whether it is verified',
  profile: 'See your display name',
  read: 'See your data',
  write: 'Change any of your data',
  write_members: 'Change members, contacts and their details',
  write_teams: 'Change team information',
  write_events: 'Change the team schedule (games and events)',
  write_users: 'Change your user information',
}

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value)
}

/** Scopes in canonical order without duplicates, so equal sets have equal strings. */
export function normalizeScopes(scopes: Iterable<string>): Scope[] {
  const set = new Set(scopes)
  return SCOPES.filter((s) => set.has(s))
}

/**
 * Parses the `scope` parameter (RFC 6749 3.3: space-delimited). Absent or blank means `read`
 * (docs/decisions/006-scopes.md); repeated tokens are tolerated. Throws InvalidScopeError for an unknown
 * scope or one the application may not request.
 */
export function parseScope(raw: string | undefined, allowed?: readonly string[]): Scope[] {
  const tokens = (raw ?? '').split(' ').filter((t) => t !== '')
  if (tokens.length === 0) tokens.push(DEFAULT_SCOPE)
  // RFC 6749 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). Anything else is malformed, and
  // is not repeated in the error: error_description allows only those characters and space.
  if (tokens.some((t) => !SCOPE_TOKEN.test(t))) {
    throw new InvalidScopeError(
      'The scope parameter is malformed: scopes are separated by spaces and use no quotes, backslashes or non-ASCII',
    )
  }
  const unknown = tokens.find((t) => !isScope(t))
  if (unknown !== undefined) throw new InvalidScopeError(`Unknown scope: ${shown(unknown)}`)
  if (allowed) {
    const refused = tokens.find((t) => !allowed.includes(t))
    if (refused !== undefined) throw new InvalidScopeError(`This application may not request the scope ${refused}`)
  }
  return normalizeScopes(tokens)
}

const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/
const SHOWN_SCOPE_MAX = 40

function shown(token: string): string {
  return token.length > SHOWN_SCOPE_MAX ? `${token.slice(0, SHOWN_SCOPE_MAX)}...` : token
}

export function formatScope(scopes: readonly string[]): string {
  return scopes.join(' ')
}
