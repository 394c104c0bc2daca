import type { AuditTrail } from '../audit/audit-log.js'
import { auditDetail } from '../audit/audit-log.js'
import type { Db } from '../db/connect.js'
import { hashPassword } from '../lib/passwords.js'
import { insertUserOrFindTaken } from '../repositories/users.js'

/**
 * Sign-up: always hashes, and answers the same way whether the account was created or the
 * email was already taken; the caller shows one message for both. Both cases cost the same
 * statements: the insert (which finds the taken account in the same statement) and one audit
 * row, `user.signed_up` for a new account, `user.signup_email_taken` on the existing account's
 * Security log otherwise.
 */
export async function registerUser(db: Db, email: string, password: string, now: Date, audit: AuditTrail): Promise<void> {
  const passwordHash = await hashPassword(password)
  const account = await insertUserOrFindTaken(db, { email, passwordHash, now })
  if (!account) return
  await audit.record(
    account.created
      ? { event: 'user.signed_up', userId: account.id, actorId: account.id }
      : { event: 'user.signup_email_taken', userId: account.id, actorId: null, detail: auditDetail.signupEmailTaken() },
  )
}
