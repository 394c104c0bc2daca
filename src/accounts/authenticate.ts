import type { Db } from '../db/connect.js'
import { hashPassword } from '../lib/passwords.js'
import { insertUser } from '../repositories/users.js'

/**
 * Sign-up: always hashes, and answers the same way whether the account was created or the
 * email was already taken; the caller shows one message for both.
 */
export async function registerUser(db: Db, email: string, password: string, now: Date): Promise<void> {
  const passwordHash = await hashPassword(password)
  await insertUser(db, { email, passwordHash, now })
}
