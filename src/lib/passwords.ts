import argon2 from 'argon2'

/** Human passwords only; generated secrets use SHA-256 (docs/decisions/002-token-format.md). */
export const PASSWORD_MIN = 8
/** Checked before hashing so a megabyte "password" cannot buy a megabyte of argon2 work. */
export const PASSWORD_MAX = 256

const options = { type: argon2.argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, options)
}

export async function verifyPassword(hash: string, password: string): Promise<boolean> {
  try {
    return await argon2.verify(hash, password)
  } catch {
    return false
  }
}

/**
 * A fixed hash to verify against when the account does not exist, so that a log-in for an
 * unknown email costs the same argon2 work as one for a known email.
 */
let dummyHash: Promise<string> | undefined
export function dummyPasswordHash(): Promise<string> {
  dummyHash ??= argon2.hash('gatehouse-dummy-password', options)
  return dummyHash
}
