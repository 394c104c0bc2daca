import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** URL-safe random string carrying `bytes` bytes of entropy. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url')
}

/**
 * Hex SHA-256: how every high-entropy secret (client secrets, codes, tokens, session ids) is
 * stored and looked up; the same function verifiers use (docs/decisions/002-token-format.md).
 */
export { sha256Hex } from '@gatehouse/verifier/shared'

export function sha256Base64Url(value: string): string {
  return createHash('sha256').update(value).digest('base64url')
}

/** Constant-time comparison of two strings of any length (length leaks, content does not). */
export function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a)
  const bb = Buffer.from(b)
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab)
    return false
  }
  return timingSafeEqual(ab, bb)
}
