import { constantTimeEqual, sha256Base64Url } from '../../lib/crypto.js'
import { InvalidRequestError } from '../errors.js'

/*
 * PKCE (RFC 7636). Both methods are accepted (RFC 7636 4.2); `plain` only protects against
 * an attacker who reads the redirect, S256 also against one who reads the authorization request.
 */
export type ChallengeMethod = 'S256' | 'plain'

/** RFC 7636 4.1: code-verifier = 43*128unreserved. A plain challenge is a verifier. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/
/** RFC 7636 4.2: BASE64URL(SHA256(verifier)) of 32 bytes, no padding. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/

export function isValidVerifier(verifier: string): boolean {
  return VERIFIER.test(verifier)
}

/** RFC 7636 4.3: the method defaults to `plain` when a challenge comes without one. */
export function parseChallengeMethod(raw: string | undefined): ChallengeMethod {
  if (raw === undefined || raw === 'plain') return 'plain'
  if (raw === 'S256') return 'S256'
  throw new InvalidRequestError('code_challenge_method must be S256 or plain')
}

/** Checks a challenge's shape at the authorization endpoint (RFC 7636 4.4.1: invalid_request). */
export function validateChallenge(challenge: string, method: ChallengeMethod): void {
  const ok = method === 'S256' ? S256_CHALLENGE.test(challenge) : VERIFIER.test(challenge)
  if (!ok) {
    throw new InvalidRequestError(
      method === 'S256'
        ? 'code_challenge must be 43 base64url characters (the SHA-256 of the verifier)'
        : 'code_challenge must be 43-128 characters of A-Z a-z 0-9 - . _ ~',
    )
  }
}

export function computeS256Challenge(verifier: string): string {
  return sha256Base64Url(verifier)
}

/** The challenge that `verifier` would answer under `method` (RFC 7636 4.6). */
export function challengeFor(verifier: string, method: ChallengeMethod): string {
  return method === 'S256' ? computeS256Challenge(verifier) : verifier
}

export function verifyCodeVerifier(verifier: string, challenge: string, method: ChallengeMethod): boolean {
  if (!isValidVerifier(verifier)) return false
  return constantTimeEqual(challengeFor(verifier, method), challenge)
}
