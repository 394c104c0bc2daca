import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'

/*
 * Secrets Gatehouse must read back (a TOTP secret: the server needs it to compute the code, so a
 * digest will not do) are stored sealed: AES-256-GCM (NIST SP 800-38D) with a random 96-bit IV
 * per value, so equal secrets never seal alike and any change to the stored text is detected by
 * the tag. One text value per secret: `v1.` and the base64url of iv | tag | ciphertext; the
 * version names the algorithm and the key derivation, so a later format can be told apart.
 * docs/decisions/011-second-factor.md.
 */

const FORMAT = 'v1'
const IV_BYTES = 12
const TAG_BYTES = 16
/**
 * The HKDF info of the sealing key (RFC 5869 3.2): SECRET_KEY may later key other purposes, each
 * with its own info, and no two derive the same key.
 */
const SEALING_INFO = 'gatehouse sealed-box v1 aes-256-gcm'

export class SealedBoxError extends Error {
  override name = 'SealedBoxError'
}

/** Seals and opens text values under one key; built once (src/services.ts), never logged. */
export interface SealedBox {
  seal(plaintext: string): string
  open(sealed: string): string
}

/**
 * The box keyed by HKDF-SHA256 of the key-encryption key (SECRET_KEY's bytes, or the key file's):
 * no salt (the input is already a high-entropy key or a long passphrase), a fixed info string.
 */
export function createSealedBox(keyMaterial: string | Uint8Array): SealedBox {
  const key = Buffer.from(hkdfSync('sha256', keyMaterial, Buffer.alloc(0), SEALING_INFO, 32))
  return Object.freeze({
    seal: (plaintext: string) => seal(key, plaintext),
    open: (sealed: string) => open(key, sealed),
  })
}

function seal(key: Buffer, plaintext: string): string {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
  return `${FORMAT}.${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')}`
}

/** The plaintext; throws SealedBoxError for another format, a changed value or another key. */
function open(key: Buffer, sealed: string): string {
  const [format, body, ...rest] = sealed.split('.')
  if (format !== FORMAT || body === undefined || rest.length > 0) throw new SealedBoxError('not a sealed value of this version')
  const bytes = Buffer.from(body, 'base64url')
  if (bytes.length < IV_BYTES + TAG_BYTES) throw new SealedBoxError('sealed value too short')
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES))
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
  try {
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')
  } catch {
    throw new SealedBoxError('sealed value changed, or sealed under another key')
  }
}
