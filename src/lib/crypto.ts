import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { sha256Hex } from '@gatehouse/verifier/shared'

/** URL-safe random string carrying `bytes` bytes of entropy. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url')
}

/** Hex SHA-256: how every high-entropy secret (client secrets, codes, tokens) is stored. */
export const sha256 = sha256Hex

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
