import { randomInt } from 'node:crypto'
import { sha256Hex } from '../../lib/crypto.js'

/*
 * Recovery codes (docs/decisions/011-second-factor.md): ten per account, each ten characters of
 * an alphabet without look-alikes (no 0/o, 1/l/i), shown `xxxxx-xxxxx`. 31^10 is about 2^49.5:
 * far beyond what the log-in limits let anyone guess, so a fast digest (SHA-256) stores them as
 * it stores every other high-entropy secret, without a slow password hash.
 */

export const RECOVERY_CODE_COUNT = 10
const ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789'
const LENGTH = 10

/** A new code, as shown: two groups of five. */
function newRecoveryCode(): string {
  let code = ''
  for (let i = 0; i < LENGTH; i++) code += ALPHABET[randomInt(ALPHABET.length)]
  return `${code.slice(0, 5)}-${code.slice(5)}`
}

export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode)
}

/**
 * A typed code as stored: lower case, without spaces or dashes; undefined for anything that
 * cannot be a code (then nothing is looked up).
 */
export function normalizeRecoveryCode(typed: string): string | undefined {
  const code = typed.toLowerCase().replace(/[\s-]/g, '')
  return code.length === LENGTH && [...code].every((c) => ALPHABET.includes(c)) ? code : undefined
}

/** The digest stored for a shown or typed code. */
export function recoveryCodeHash(code: string): string | undefined {
  const normalized = normalizeRecoveryCode(code)
  return normalized === undefined ? undefined : sha256Hex(`gatehouse recovery code|${normalized}`)
}
