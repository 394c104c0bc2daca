import { readFileSync } from 'node:fs'
import { scopeSatisfies } from './scope.js'

/*
 * The scopes an API defines (docs/operating/scopes.md, docs/decisions/018-operator-scopes.md): the
 * one parser of a scopes file, which Gatehouse's server (through `@gatehouse/verifier/shared`)
 * and the verifier both use, so both read a file the same way. Written by hand rather than with a
 * schema library: the verifier installs into resource APIs and carries no dependency for it.
 */

export interface ScopeDefinition {
  /** RFC 6749 3.3 scope-token. */
  readonly name: string
  /** The plain words the consent page shows next to the scope. */
  readonly description: string
  /** The scopes this one implies, directly, as written. */
  readonly implies: readonly string[]
}

export interface ScopeCatalogue {
  /** In display order, which is also the canonical order of a scope string. */
  readonly scopes: readonly ScopeDefinition[]
  /** What an authorization request without `scope` asks for (RFC 6749 3.3); empty: `scope` is required. */
  readonly defaultScopes: readonly string[]
  /**
   * When implications apply. `grant`: a file's; Gatehouse adds implied scopes to the grant when
   * the user consents, and a check is plain inclusion, so a later file never widens a live token.
   * `check`: the built-in seed's `write` covers every `write_*` when a token is checked
   * (docs/decisions/006-scopes.md).
   */
  readonly impliedAt: 'grant' | 'check'
}

/** OpenID Connect Core 5.4 defines these; Gatehouse always offers them and a file may not redefine them. */
export const IDENTITY_SCOPES: readonly string[] = Object.freeze(['openid', 'email', 'profile'])

/** The six scopes Gatehouse ships with, used when no file is given (docs/decisions/006-scopes.md). */
export const SEED_SCOPES: ScopeCatalogue = Object.freeze({
  scopes: Object.freeze(
    [
      { name: 'read', description: 'See your data', implies: [] },
      { name: 'write', description: 'Change any of your data', implies: ['write_members', 'write_teams', 'write_events', 'write_users'] },
      { name: 'write_members', description: 'Change members, contacts and their details', implies: [] },
      { name: 'write_teams', description: 'Change team information', implies: [] },
      { name: 'write_events', description: 'Change the team schedule (games and events)', implies: [] },
      { name: 'write_users', description: 'Change your user information', implies: [] },
    ].map((s) => Object.freeze({ ...s, implies: Object.freeze(s.implies) })),
  ),
  defaultScopes: Object.freeze(['read']),
  impliedAt: 'check',
})

export const MAX_SCOPES = 200
export const MAX_SCOPE_NAME_LENGTH = 64
export const MAX_DESCRIPTION_LENGTH = 200
const MAX_FILE_BYTES = 256 * 1024

/** RFC 6749 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). */
export const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/** A scopes file that cannot be used; the message names the file and the first problem. */
export class ScopeFileError extends Error {
  override name = 'ScopeFileError'
}

/** Reads and checks a scopes file (JSON, docs/operating/scopes.md); throws ScopeFileError. */
export function readScopesFile(path: string): ScopeCatalogue {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new ScopeFileError(`Scopes file ${path}: cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`)
  }
  return parseScopesFile(text, path)
}

/** Checks the text of a scopes file; `source` names it in the messages. Throws ScopeFileError. */
export function parseScopesFile(text: string, source: string): ScopeCatalogue {
  const fail = (problem: string): never => {
    throw new ScopeFileError(`Scopes file ${source}: ${problem}`)
  }
  if (Buffer.byteLength(text) > MAX_FILE_BYTES) fail(`is larger than ${MAX_FILE_BYTES / 1024} KiB`)
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (err) {
    fail(`is not JSON (${(err as Error).message})`)
  }
  try {
    return catalogueOf(json)
  } catch (err) {
    if (err instanceof Problem) fail(err.message)
    throw err
  }
}

class Problem extends Error {}

function catalogueOf(json: unknown): ScopeCatalogue {
  if (!isObject(json)) throw new Problem('must be a JSON object with a "scopes" list')
  const extra = Object.keys(json).find((k) => k !== 'scopes' && k !== 'default')
  if (extra !== undefined) throw new Problem(`unknown key "${shown(extra)}" (allowed: scopes, default)`)
  const list = json.scopes
  if (!Array.isArray(list) || list.length === 0) throw new Problem('"scopes" must be a non-empty list')
  if (list.length > MAX_SCOPES) throw new Problem(`"scopes" has ${list.length} entries, at most ${MAX_SCOPES} are allowed`)
  const scopes = list.map((entry, i) => definitionOf(entry, i))
  const names = new Set<string>()
  for (const s of scopes) {
    if (names.has(s.name)) throw new Problem(`scope "${s.name}" is defined twice`)
    names.add(s.name)
  }
  for (const s of scopes) {
    const unknown = s.implies.find((n) => !names.has(n))
    if (unknown !== undefined) throw new Problem(`scope "${s.name}" implies "${shown(unknown)}", which the file does not define`)
    if (s.implies.includes(s.name)) throw new Problem(`scope "${s.name}" implies itself`)
  }
  const defaultScopes = nameList(json.default ?? [], '"default"')
  const unknownDefault = defaultScopes.find((n) => !names.has(n) && !IDENTITY_SCOPES.includes(n))
  if (unknownDefault !== undefined) throw new Problem(`"default" names "${shown(unknownDefault)}", which the file does not define`)
  return Object.freeze({ scopes: Object.freeze(scopes), defaultScopes: Object.freeze(defaultScopes), impliedAt: 'grant' as const })
}

function definitionOf(entry: unknown, i: number): ScopeDefinition {
  const at = `scopes[${i}]`
  if (!isObject(entry)) throw new Problem(`${at} must be an object with "name" and "description"`)
  const extra = Object.keys(entry).find((k) => !['name', 'description', 'implies'].includes(k))
  if (extra !== undefined) throw new Problem(`${at} has an unknown key "${shown(extra)}" (allowed: name, description, implies)`)
  const name = scopeName(entry.name, `${at}.name`)
  if (IDENTITY_SCOPES.includes(name)) throw new Problem(`${at}.name "${name}" is an OpenID Connect scope, which Gatehouse defines itself`)
  const description = entry.description
  if (typeof description !== 'string' || description.trim() === '') throw new Problem(`${at} ("${name}") needs a "description"`)
  if (description.length > MAX_DESCRIPTION_LENGTH) {
    throw new Problem(`${at} ("${name}"): "description" is longer than ${MAX_DESCRIPTION_LENGTH} characters`)
  }
  if (CONTROL.test(description)) throw new Problem(`${at} ("${name}"): "description" contains control characters`)
  const implies = nameList(entry.implies ?? [], `${at}.implies`)
  return Object.freeze({ name, description: description.trim(), implies: Object.freeze(implies) })
}

function nameList(value: unknown, at: string): string[] {
  if (!Array.isArray(value)) throw new Problem(`${at} must be a list of scope names`)
  if (value.length > MAX_SCOPES) throw new Problem(`${at} has more than ${MAX_SCOPES} names`)
  const names = value.map((v, i) => scopeName(v, `${at}[${i}]`))
  return [...new Set(names)]
}

function scopeName(value: unknown, at: string): string {
  if (typeof value !== 'string' || value === '') throw new Problem(`${at} must be a non-empty string`)
  if (value.length > MAX_SCOPE_NAME_LENGTH) throw new Problem(`${at} is longer than ${MAX_SCOPE_NAME_LENGTH} characters`)
  if (!SCOPE_TOKEN.test(value)) {
    throw new Problem(`${at} "${shown(value)}" is not a scope token (RFC 6749 3.3: printable ASCII, no space, " or \\)`)
  }
  return value
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Enough of a bad value to find it, never a whole line of it. */
function shown(value: string): string {
  const printable = value.replace(/[^\x20-\x7e]/g, '?')
  return printable.length > 40 ? `${printable.slice(0, 40)}...` : printable
}

/**
 * `names` and every scope they imply, directly or through others, in the catalogue's order
 * (names the catalogue does not know are kept, after the known ones).
 */
export function withImplied(catalogue: ScopeCatalogue, names: Iterable<string>): string[] {
  const byName = new Map(catalogue.scopes.map((s) => [s.name, s]))
  const found = new Set<string>()
  const pending = [...names]
  while (pending.length > 0) {
    const name = pending.pop()!
    if (found.has(name)) continue
    found.add(name)
    pending.push(...(byName.get(name)?.implies ?? []))
  }
  const known = catalogue.scopes.map((s) => s.name).filter((n) => found.has(n))
  return [...known, ...[...found].filter((n) => !byName.has(n))]
}

/** The names a catalogue defines, with OpenID Connect's, which every Gatehouse offers. */
export function definedScopes(catalogue: ScopeCatalogue): ReadonlySet<string> {
  return new Set([...IDENTITY_SCOPES, ...catalogue.scopes.map((s) => s.name)])
}

/**
 * The check of a granted scope list against a required scope under `catalogue`, built once: a
 * scope the catalogue does not define grants nothing (a removed scope stops working); under a
 * file, plain inclusion, since implied scopes were added when the grant was made
 * (docs/decisions/018-operator-scopes.md); under the seed, `write` covers `write_*`.
 */
export function scopeCheck(catalogue: ScopeCatalogue): (granted: readonly string[], required: string) => boolean {
  const defined = definedScopes(catalogue)
  if (catalogue.impliedAt === 'check') return (granted, required) => defined.has(required) && scopeSatisfies(granted, required)
  return (granted, required) => defined.has(required) && granted.includes(required)
}
