import { describe, expect, it } from 'vitest'
import { parseDisplayName } from '../../src/accounts/settings/profile.js'
import { accessTokenHash } from '../../src/oauth/identity/id-token.js'

describe('at_hash (OpenID Connect Core 3.1.3.6)', () => {
  it('is the left half of the hash of the access token: SHA-256 for RS256 and ES256, SHA-512 for EdDSA', () => {
    // OpenID Connect Core A.3's example: access token jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y.
    expect(accessTokenHash('jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y', 'RS256')).toBe('77QmUPtjPfzWtF2AnpK9RQ')
    expect(accessTokenHash('jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y', 'ES256')).toBe('77QmUPtjPfzWtF2AnpK9RQ')
    expect(Buffer.from(accessTokenHash('x', 'EdDSA'), 'base64url')).toHaveLength(32)
  })
})

describe('the display name', () => {
  it('is trimmed, at most 100 characters, without control characters; empty removes it', () => {
    expect(parseDisplayName('  Ann  ')).toEqual({ ok: true, name: 'Ann' })
    expect(parseDisplayName('   ')).toEqual({ ok: true, name: null })
    expect(parseDisplayName('x'.repeat(100))).toEqual({ ok: true, name: 'x'.repeat(100) })
    expect(parseDisplayName('x'.repeat(101)).ok).toBe(false)
    expect(parseDisplayName('Ann\u0000').ok).toBe(false)
    expect(parseDisplayName('Ann\nExample').ok).toBe(false)
  })
})
