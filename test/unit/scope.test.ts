import { describe, expect, it } from 'vitest'
import { InvalidScopeError } from '../../src/oauth/errors.js'
import { ScopeVocabulary, formatScope } from '../../src/oauth/grants/scope.js'
import { SEED_SCOPES, scopeSatisfies } from '@gatehouse/verifier/shared'

// SCOPES_FILE unset: the built-in scopes, exactly as docs/decisions/006-scopes.md has them.
const seed = new ScopeVocabulary(SEED_SCOPES)
const SCOPES = seed.names
const parseScope = (raw: string | undefined, allowed?: readonly string[]) => seed.parse(raw, allowed)
const normalizeScopes = (scopes: string[]) => seed.normalize(scopes)

describe('parseScope', () => {
  it('defaults to read when absent or blank (docs/decisions/006-scopes.md)', () => {
    expect(parseScope(undefined)).toEqual(['read'])
    expect(parseScope('')).toEqual(['read'])
    expect(parseScope('   ')).toEqual(['read'])
  })

  it('splits on spaces, tolerates duplicates and extra spaces, returns canonical order', () => {
    expect(parseScope('write_teams read')).toEqual(['read', 'write_teams'])
    expect(parseScope('read  read write')).toEqual(['read', 'write'])
    expect(parseScope(' write_events ')).toEqual(['write_events'])
  })

  it('accepts every specified scope', () => {
    expect(parseScope(SCOPES.join(' '))).toEqual([...SCOPES])
  })

  it('rejects unknown scopes with invalid_scope', () => {
    expect(() => parseScope('read admin')).toThrow(InvalidScopeError)
    expect(() => parseScope('READ')).toThrow(/Unknown scope: READ$/)
    expect(() => parseScope('read,write')).toThrow(InvalidScopeError)
    // RFC 6749 3.3 delimits with spaces only.
    expect(() => parseScope('read\twrite')).toThrow(InvalidScopeError)
  })

  it('refuses a malformed scope without repeating it (RFC 6749 3.3 scope-token)', () => {
    for (const raw of ['x"\\', 'read "write"', 'read\\', 'lecture-é', 'read\u0000']) {
      expect(() => parseScope(raw)).toThrow(InvalidScopeError)
      expect(() => parseScope(raw)).toThrow(/^The scope parameter is malformed/)
    }
  })

  it('names an unknown scope, cut short when long', () => {
    expect(() => parseScope(`read ${'a'.repeat(300)}`)).toThrow(new RegExp(`^Unknown scope: ${'a'.repeat(40)}\\.\\.\\.$`))
  })

  it('rejects scopes the application may not request', () => {
    expect(parseScope('read write_teams', ['read', 'write_teams'])).toEqual(['read', 'write_teams'])
    expect(() => parseScope('write', ['read', 'write_teams'])).toThrow(/may not request the scope write$/)
    expect(() => parseScope(undefined, ['write'])).toThrow(InvalidScopeError)
  })

  it('has an invalid_scope error code', () => {
    try {
      parseScope('nope')
      expect.unreachable()
    } catch (e) {
      expect((e as InvalidScopeError).error).toBe('invalid_scope')
    }
  })
})

describe('scopeSatisfies (write implies write_*)', () => {
  it('grants what is listed', () => {
    expect(scopeSatisfies(['read'], 'read')).toBe(true)
    expect(scopeSatisfies(['write_teams'], 'write_teams')).toBe(true)
  })
  it('lets write cover every write_* scope', () => {
    for (const s of ['write_members', 'write_teams', 'write_events', 'write_users']) {
      expect(scopeSatisfies(['write'], s)).toBe(true)
    }
  })
  it('does not let write cover read, nor write_* cover write', () => {
    expect(scopeSatisfies(['write'], 'read')).toBe(false)
    expect(scopeSatisfies(['write_teams'], 'write')).toBe(false)
    expect(scopeSatisfies(['write_teams'], 'write_events')).toBe(false)
    expect(scopeSatisfies([], 'read')).toBe(false)
  })
})

describe('helpers', () => {
  it('normalizeScopes orders, dedupes and drops unknowns', () => {
    expect(normalizeScopes(['write', 'read', 'write', 'bogus'])).toEqual(['read', 'write'])
  })
  it('keeps the nine names in the order they always had', () => {
    expect(SCOPES).toEqual(['openid', 'email', 'profile', 'read', 'write', 'write_members', 'write_teams', 'write_events', 'write_users'])
  })
  it('formatScope joins with single spaces', () => {
    expect(formatScope(['read', 'write_teams'])).toBe('read write_teams')
  })
  it('describes every scope in plain words', () => {
    for (const s of SCOPES) expect(seed.describe(s)).toMatch(/^[A-Z][a-z ,()]+/)
  })
})
