import { crc32 } from 'node:zlib'
import { randomToken, sha256 } from './crypto.js'

/*
 * Formats of the secrets Gatehouse issues (DESIGN.md "Identifiers and secrets").
 * Prefixes let secret scanners recognise leaks; the access token's CRC-32 suffix lets the
 * bearer check and introspection reject garbage without touching the database.
 */
export const ACCESS_TOKEN_PREFIX = 'gat_'
export const CLIENT_SECRET_PREFIX = 'gcs_'
export const CODE_PREFIX = 'gac_'

const BODY_LENGTH = 43 // 32 random bytes, base64url without padding
const CHECKSUM_LENGTH = 6 // CRC-32 as 4 bytes base64url
const ACCESS_TOKEN_LENGTH = ACCESS_TOKEN_PREFIX.length + BODY_LENGTH + CHECKSUM_LENGTH
const ACCESS_TOKEN_SHAPE = /^gat_[A-Za-z0-9_-]{49}$/

function checksum(body: string): string {
  const buf = Buffer.alloc(4)
  buf.writeUInt32BE(crc32(body) >>> 0)
  return buf.toString('base64url')
}

export function generateAccessToken(): string {
  const body = randomToken(32)
  return ACCESS_TOKEN_PREFIX + body + checksum(body)
}

/** True when the string has the shape and checksum of a Gatehouse access token. */
export function isWellFormedAccessToken(token: string): boolean {
  if (token.length !== ACCESS_TOKEN_LENGTH || !ACCESS_TOKEN_SHAPE.test(token)) return false
  const body = token.slice(ACCESS_TOKEN_PREFIX.length, ACCESS_TOKEN_PREFIX.length + BODY_LENGTH)
  return checksum(body) === token.slice(ACCESS_TOKEN_PREFIX.length + BODY_LENGTH)
}

export function generateClientSecret(): string {
  return CLIENT_SECRET_PREFIX + randomToken(32)
}

export function generateAuthorizationCode(): string {
  return CODE_PREFIX + randomToken(32)
}

/** Public identifier: random but not secret, so no prefix tricks and no hashing. */
export function generateClientId(): string {
  return randomToken(18)
}

/** The digest under which a token, code or secret is stored and looked up. */
export const digest = sha256
