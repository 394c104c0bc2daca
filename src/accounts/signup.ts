import { hashPassword } from '../lib/passwords.js'
import { insertUser } from '../repositories/users.js'
import type { AccountContext } from './context.js'
import { issueEmailLink } from './email-links.js'
import { signUpAttemptMail, verificationMail } from './mails.js'

/**
 * Sign-up. Always hashes, and does the same work whether the account was created or the email
 * was already taken: one mail either way (a verification link to a new account, a "someone
 * tried to sign up" notice to an existing one), so neither the answer, its timing nor a mail
 * failure tells which. `mailSent` false: the mail could not be sent; the account (if new) exists
 * and its owner can ask for the verification mail again after logging in.
 */
export async function signUp(ctx: AccountContext, email: string, password: string): Promise<{ mailSent: boolean }> {
  const now = ctx.clock()
  const passwordHash = await hashPassword(password)
  const created = await insertUser(ctx.db, { email, passwordHash, now })
  if (!created) return { mailSent: await ctx.mailer.send(signUpAttemptMail(ctx, email)) }
  const link = await issueEmailLink(ctx.db, ctx.publicUrl, { purpose: 'verify-email', userId: created.id, email, now })
  return { mailSent: await ctx.mailer.send(verificationMail(ctx, email, link)) }
}
