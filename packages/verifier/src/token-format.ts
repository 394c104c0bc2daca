import crypto, { createHash } from 'node:crypto'
import { crc32 } from 'node:zlib'

/*
 * The access-token format (docs/decisions/002-token-format.md): `gat_`, 32 random bytes in
 * base64url, and a CRC-32 of those bytes. The prefix lets secret scanners recognise a leak;
 * the checksum lets a verifier refuse garbage without a lookup. Gatehouse issues tokens in this
 * format and every verifier checks it, so it lives here, where both import it.
 */
export const ACCESS_TOKEN_PREFIX = 'gat_'
/**
 * A refresh token (RFC 6749 §6) has the same body and checksum under its own prefix, so that
 * one is never mistaken for the other: a verifier refuses a refresh token by its shape, and the
 * token endpoint an access token (docs/expiring-tokens.md).
 */
export const REFRESH_TOKEN_PREFIX = 'grt_'

const BODY_LENGTH = 43 // 32 random bytes, base64url without padding
const CHECKSUM_LENGTH = 6 // CRC-32 as 4 bytes base64url
const ACCESS_TOKEN_LENGTH = ACCESS_TOKEN_PREFIX.length + BODY_LENGTH + CHECKSUM_LENGTH
const ACCESS_TOKEN_SHAPE = /^gat_[A-Za-z0-9_-]{49}$/
const REFRESH_TOKEN_SHAPE = /^grt_[A-Za-z0-9_-]{49}$/

function checksum(body: string): string {
  const buf = Buffer.alloc(4)
  buf.writeUInt32BE(crc32(body) >>> 0)
  return buf.toString('base64url')
}

/** A token from 43 base64url characters of fresh randomness. */
export function formatAccessToken(randomBody: string): string {
  if (randomBody.length !== BODY_LENGTH) throw new RangeError(`the token body must be ${BODY_LENGTH} characters`)
  return ACCESS_TOKEN_PREFIX + randomBody + checksum(randomBody)
}

/** A refresh token from 43 base64url characters of fresh randomness. */
export function formatRefreshToken(randomBody: string): string {
  if (randomBody.length !== BODY_LENGTH) throw new RangeError(`the token body must be ${BODY_LENGTH} characters`)
  return REFRESH_TOKEN_PREFIX + randomBody + checksum(randomBody)
}

/** Each base64url character's 6 bits by character code; the shape check lets no other through. */
const SEXTET = new Uint8Array(128)
for (const [i, c] of [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'].entries()) SEXTET[c.charCodeAt(0)] = i

/**
 * True when the string has the shape and checksum of a Gatehouse access token. The checksum is
 * read as a number rather than the CRC written out as text: every cache miss and revocation
 * checks one, and the text costs a buffer and a string each time (Gatehouse's docs/decisions/016-hot-path-rules.md). Six characters
 * carry 36 bits: the CRC's 32 and 4 that base64url leaves zero, so that only the one text
 * `checksum` writes is accepted.
 */
export function isWellFormedAccessToken(token: string): boolean {
  if (token.length !== ACCESS_TOKEN_LENGTH || !ACCESS_TOKEN_SHAPE.test(token)) return false
  return checksumHolds(token)
}

/** True when the string has the shape and checksum of a Gatehouse refresh token. */
export function isWellFormedRefreshToken(token: string): boolean {
  if (token.length !== ACCESS_TOKEN_LENGTH || !REFRESH_TOKEN_SHAPE.test(token)) return false
  return checksumHolds(token)
}

/** The checksum of a token whose shape (a four-character prefix, body, checksum) was checked. */
function checksumHolds(token: string): boolean {
  const at = ACCESS_TOKEN_PREFIX.length + BODY_LENGTH
  const last = SEXTET[token.charCodeAt(at + 5)]!
  if ((last & 0xf) !== 0) return false
  const written =
    SEXTET[token.charCodeAt(at)]! * 2 ** 26 +
    (SEXTET[token.charCodeAt(at + 1)]! << 20) +
    (SEXTET[token.charCodeAt(at + 2)]! << 14) +
    (SEXTET[token.charCodeAt(at + 3)]! << 8) +
    (SEXTET[token.charCodeAt(at + 4)]! << 2) +
    (last >> 4)
  return written === crc32(token.slice(ACCESS_TOKEN_PREFIX.length, at)) >>> 0
}

/*
 * One-shot hashing (Node 20.12+) takes half the time of a Hash object, and every token check
 * hashes once; older Node 20 releases fall back to createHash.
 */
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash

/** Hex SHA-256: the digest under which tokens (and every other high-entropy secret) are stored and announced. */
export const sha256Hex: (value: string) => string = oneShotHash
  ? (value) => oneShotHash('sha256', value, 'hex')
  : (value) => createHash('sha256').update(value).digest('hex')
