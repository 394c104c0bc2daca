import { randomInt } from 'node:crypto'
import { randomToken, sha256Hex } from '../../lib/crypto.js'

/*
 * The device flow's two codes (RFC 8628 3.2, 6.1; docs/decisions/020-device-codes.md). The user
 * code is typed by a person: 8 letters from 20 consonants (no vowels, so no words; no I, O or 1, 0
 * to confuse), shown as XXXX-XXXX, 20^8 (about 2^34.6) codes. The device code is a bearer secret
 * like an authorization code (256 bits), prefixed so a leaked one is recognisable.
 */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ'
export const USER_CODE_LENGTH = 8
export const DEVICE_CODE_PREFIX = 'gdc_'

export function generateDeviceCode(): string {
  return DEVICE_CODE_PREFIX + randomToken(32)
}

/** A fresh user code, as shown: XXXX-XXXX. */
export function generateUserCode(): string {
  let code = ''
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)]
  return `${code.slice(0, 4)}-${code.slice(4)}`
}

/**
 * The code as typed, made canonical (RFC 8628 6.1: case-insensitive, separators ignored); undefined
 * when it cannot be a user code, so nothing is looked up for it.
 */
export function normaliseUserCode(typed: unknown): string | undefined {
  if (typeof typed !== 'string' || typed.length > 64) return undefined
  const code = typed.toUpperCase().replace(/[\s-]/g, '')
  if (code.length !== USER_CODE_LENGTH) return undefined
  for (const c of code) if (!USER_CODE_ALPHABET.includes(c)) return undefined
  return code
}

/** How a normalised user code is stored and found: its SHA-256, never the code. */
export function userCodeDigest(normalised: string): string {
  return sha256Hex(`user-code:${normalised}`)
}

/** The normalised code as the page shows it. */
export function formatUserCode(normalised: string): string {
  return `${normalised.slice(0, 4)}-${normalised.slice(4)}`
}
