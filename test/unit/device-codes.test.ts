import { describe, expect, it } from 'vitest'
import {
  DEVICE_CODE_PREFIX,
  USER_CODE_ALPHABET,
  formatUserCode,
  generateDeviceCode,
  generateUserCode,
  normaliseUserCode,
  userCodeDigest,
} from '../../src/oauth/device/user-code.js'

/* The device flow's codes (RFC 8628 6.1; docs/decisions/020-device-codes.md). */
describe('user codes', () => {
  it('are 8 letters of 20 consonants, shown XXXX-XXXX, with no vowel and nothing mistaken for a digit', () => {
    expect(USER_CODE_ALPHABET).toHaveLength(20)
    expect(USER_CODE_ALPHABET).not.toMatch(/[AEIOUY0-9]/)
    const seen = new Set<string>()
    for (let i = 0; i < 2000; i++) {
      const code = generateUserCode()
      expect(code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/)
      for (const c of code.replace('-', '')) seen.add(c)
    }
    // Every letter of the alphabet is drawn (2000 codes: 16,000 draws of 20 letters).
    expect([...seen].sort().join('')).toBe(USER_CODE_ALPHABET)
  })

  it('are compared case-insensitively, ignoring dashes and spaces; anything else is no code', () => {
    expect(normaliseUserCode('bcdf-ghjk')).toBe('BCDFGHJK')
    expect(normaliseUserCode(' BCDF GHJK ')).toBe('BCDFGHJK')
    expect(normaliseUserCode('bcdfghjk')).toBe('BCDFGHJK')
    for (const bad of ['BCDF-GHJ', 'BCDF-GHJKL', 'AEIO-UBCD', 'BCDF-GHJ0', 'BCDF_GHJK', '', 'ß'.repeat(8), 'x'.repeat(65), 42, undefined]) {
      expect(normaliseUserCode(bad)).toBeUndefined()
    }
    expect(formatUserCode('BCDFGHJK')).toBe('BCDF-GHJK')
  })

  it('are stored as a digest of the normalised form, never the code', () => {
    const digest = userCodeDigest('BCDFGHJK')
    expect(digest).toMatch(/^[0-9a-f]{64}$/)
    expect(digest).not.toContain('BCDFGHJK')
    expect(userCodeDigest(normaliseUserCode('bcdf ghjk')!)).toBe(digest)
  })
})

describe('device codes', () => {
  it('carry 256 random bits behind a recognisable prefix', () => {
    const code = generateDeviceCode()
    expect(code.startsWith(DEVICE_CODE_PREFIX)).toBe(true)
    expect(Buffer.from(code.slice(DEVICE_CODE_PREFIX.length), 'base64url')).toHaveLength(32)
    expect(generateDeviceCode()).not.toBe(code)
  })
})
