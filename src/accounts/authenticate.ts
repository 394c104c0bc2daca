import type { Db } from '../db/connect.js'
import { dummyPasswordHash, hashPassword, verifyPassword } from '../lib/passwords.js'
import { findUserByEmail, insertUser } from '../repositories/users.js'

/**
 * Log-in: the same argon2 work whether or not the email exists, so neither the answer nor
 * its timing tells an attacker which emails are registered.
 */
export async function authenticateUser(db: Db, email: string, password: string): Promise<{ id: string } | undefined> {
  const user = await findUserByEmail(db, email)
  const ok = await verifyPassword(user?.password_hash ?? (await dummyPasswordHash()), password)
  return user && ok ? { id: user.id } : undefined
}

/**
 * Sign-up: always hashes, and answers the same way whether the account was created or the
 * email was already taken; the caller shows one message for both.
 */
export async function registerUser(db: Db, email: string, password: string, now: Date): Promise<void> {
  const passwordHash = await hashPassword(password)
  await insertUser(db, { email, passwordHash, now })
}
