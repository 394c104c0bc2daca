import { type AuditTrail, auditDetail } from '../../audit/audit-log.js'
import { hashPassword } from '../../lib/passwords.js'
import { insertUserOrFindTaken } from '../../repositories/users.js'
import type { AccountContext } from '../context.js'
import { issueEmailLink } from './email-links.js'
import { signUpAttemptMail, verificationMail } from '../mails.js'

/**
 * Sign-up. Always hashes, and does the same work whether the account was created or the email
 * was already taken: the insert (which finds the taken account in the same statement), one
 * audit row (`user.signed_up` for a new account, `user.signup_email_taken` on the existing
 * account's Security log) and one mail (a verification link to a new account, a "someone tried
 * to sign up" notice to an existing one), so neither the answer, its timing nor a mail failure
 * tells which. `mailSent` false: the mail could not be sent; the account (if new) exists and its
 * owner can ask for the verification mail again after logging in.
 */
export async function signUp(ctx: AccountContext, email: string, password: string, audit: AuditTrail): Promise<{ mailSent: boolean }> {
  const now = ctx.clock()
  const passwordHash = await hashPassword(password)
  const account = await insertUserOrFindTaken(ctx.db, { email, passwordHash, now })
  // Undefined only when a concurrent sign-up for the same email won: that one mails.
  if (!account) return { mailSent: await ctx.mailer.send(signUpAttemptMail(ctx, email)) }
  if (!account.created) {
    await audit.record({ event: 'user.signup_email_taken', userId: account.id, actorId: null, detail: auditDetail.signupEmailTaken() })
    return { mailSent: await ctx.mailer.send(signUpAttemptMail(ctx, email)) }
  }
  await audit.record({ event: 'user.signed_up', userId: account.id, actorId: account.id })
  const link = await issueEmailLink(ctx.db, ctx.publicUrl, { purpose: 'verify-email', userId: account.id, email, now })
  return { mailSent: await ctx.mailer.send(verificationMail(ctx, email, link)) }
}
