import { describe, expect, it } from 'vitest'
import { InvalidRequestError } from '../../src/oauth/errors.js'
import {
  challengeFor,
  computeS256Challenge,
  isValidVerifier,
  parseChallengeMethod,
  validateChallenge,
  verifyCodeVerifier,
} from '../../src/oauth/token/pkce.js'

// RFC 7636 appendix B.
const RFC_VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'
const RFC_CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'

describe('PKCE (RFC 7636)', () => {
  it('computes the S256 challenge of the RFC example', () => {
    expect(computeS256Challenge(RFC_VERIFIER)).toBe(RFC_CHALLENGE)
    expect(challengeFor(RFC_VERIFIER, 'S256')).toBe(RFC_CHALLENGE)
    expect(challengeFor(RFC_VERIFIER, 'plain')).toBe(RFC_VERIFIER)
  })

  it('checks the verifier format (4.1: 43-128 unreserved characters)', () => {
    expect(isValidVerifier('a'.repeat(43))).toBe(true)
    expect(isValidVerifier('a'.repeat(128))).toBe(true)
    expect(isValidVerifier('Az09-._~'.repeat(6))).toBe(true)
    expect(isValidVerifier('a'.repeat(42))).toBe(false)
    expect(isValidVerifier('a'.repeat(129))).toBe(false)
    expect(isValidVerifier(`${'a'.repeat(42)}+`)).toBe(false)
    expect(isValidVerifier(`${'a'.repeat(42)} `)).toBe(false)
    expect(isValidVerifier(`${'a'.repeat(42)}=`)).toBe(false)
  })

  it('defaults the method to plain and rejects unknown methods (4.3)', () => {
    expect(parseChallengeMethod(undefined)).toBe('plain')
    expect(parseChallengeMethod('plain')).toBe('plain')
    expect(parseChallengeMethod('S256')).toBe('S256')
    expect(() => parseChallengeMethod('s256')).toThrow(InvalidRequestError)
    expect(() => parseChallengeMethod('S512')).toThrow(InvalidRequestError)
  })

  it('checks the challenge format per method', () => {
    expect(() => validateChallenge(RFC_CHALLENGE, 'S256')).not.toThrow()
    expect(() => validateChallenge(RFC_VERIFIER, 'plain')).not.toThrow()
    expect(() => validateChallenge(`${RFC_CHALLENGE}=`, 'S256')).toThrow(InvalidRequestError)
    expect(() => validateChallenge('short', 'S256')).toThrow(InvalidRequestError)
    expect(() => validateChallenge('a'.repeat(44), 'S256')).toThrow(InvalidRequestError)
    expect(() => validateChallenge('short', 'plain')).toThrow(InvalidRequestError)
    expect(() => validateChallenge('a'.repeat(129), 'plain')).toThrow(InvalidRequestError)
  })

  it('verifies a verifier against its challenge', () => {
    expect(verifyCodeVerifier(RFC_VERIFIER, RFC_CHALLENGE, 'S256')).toBe(true)
    expect(verifyCodeVerifier(RFC_VERIFIER, RFC_VERIFIER, 'plain')).toBe(true)
    expect(verifyCodeVerifier(`${RFC_VERIFIER}x`, RFC_CHALLENGE, 'S256')).toBe(false)
    expect(verifyCodeVerifier(RFC_VERIFIER, RFC_CHALLENGE, 'plain')).toBe(false)
    // A malformed verifier never verifies, even when it equals a plain challenge.
    expect(verifyCodeVerifier('short', 'short', 'plain')).toBe(false)
  })
})
