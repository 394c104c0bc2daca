import type { AuditTrail } from '../audit/audit-log.js'
import { hashPassword } from '../lib/passwords.js'
import { takeSlots } from '../limits/rate-limiter.js'
import { voidEmailTokens } from '../repositories/email-tokens.js'
import { deleteSessionsOfUser } from '../repositories/sessions.js'
import { findUserByEmail, lockUser, markEmailVerified, setPasswordHash } from '../repositories/users.js'
import type { AccountContext } from './context.js'
import { issueEmailLink, peekEmailLink, useEmailLink } from './email-links.js'
import { passwordChangedMail, passwordResetMail, passwordResetNoAccountMail } from './mails.js'

const ONE_HOUR = 3600_000

export type ResetRequestResult =
  { readonly kind: 'done'; readonly mailSent: boolean } | { readonly kind: 'limited'; readonly retryAfterSeconds: number }

/**
 * "Forgot your password?". Limited per client address and per email typed (whether or not it
 * has an account). The same answer, and the same work, for known and unknown emails: a known
 * one gets a link valid for 1 hour, an unknown one a mail saying no account uses it.
 */
export async function requestPasswordReset(ctx: AccountContext, email: string, address: string): Promise<ResetRequestResult> {
  const slots = await takeSlots(ctx.db, ctx.clock, [
    { key: `reset:addr:${address}`, limit: ctx.limits.passwordResetAddresses, windowMs: ONE_HOUR },
    { key: `reset:email:${email}`, limit: ctx.limits.passwordResets, windowMs: ONE_HOUR },
  ])
  if (!slots.allowed) return { kind: 'limited', retryAfterSeconds: slots.retryAfterSeconds }
  const user = await findUserByEmail(ctx.db, email)
  if (!user) return { kind: 'done', mailSent: await ctx.mailer.send(passwordResetNoAccountMail(ctx, email)) }
  const link = await issueEmailLink(ctx.db, ctx.publicUrl, { purpose: 'reset-password', userId: user.id, email, now: ctx.clock() })
  return { kind: 'done', mailSent: await ctx.mailer.send(passwordResetMail(ctx, email, link)) }
}

/** The address a working reset link was sent to (for the form's username field), or undefined. */
export async function resetLinkEmail(ctx: AccountContext, token: unknown): Promise<string | undefined> {
  return (await peekEmailLink(ctx.db, 'reset-password', token, ctx.clock()))?.email
}

export type ResetResult =
  | { readonly kind: 'reset'; readonly email: string; readonly mailSent: boolean }
  | { readonly kind: 'invalid' }
  /** An operator suspended the account: its password does not change (the link is spent). */
  | { readonly kind: 'suspended' }

/**
 * Sets the new password (already checked against the rules) with a reset link, in one
 * transaction: the link is used up, every other reset link of the account is void, every session
 * of the account ends (whoever held one must log in with the new password), and the address
 * counts as verified (the link reached it). Then a notice goes to the address.
 */
export async function resetPassword(ctx: AccountContext, token: unknown, newPassword: string, audit: AuditTrail): Promise<ResetResult> {
  // Checked before the argon2 work, which a dead link should not cost.
  if ((await peekEmailLink(ctx.db, 'reset-password', token, ctx.clock())) === undefined) return { kind: 'invalid' }
  const passwordHash = await hashPassword(newPassword)
  const now = ctx.clock()
  const reset = await ctx.db.transaction().execute(async (trx) => {
    const link = await useEmailLink(trx, 'reset-password', token, now)
    if (!link) return undefined
    const user = await lockUser(trx, link.user_id)
    // A link sent to an address the account has left is void.
    if (!user || user.email !== link.email) return undefined
    // Under the row lock that suspendUser takes: a suspension committed first is seen here.
    if (user.suspended_at !== null) return 'suspended'
    await setPasswordHash(trx, user.id, passwordHash)
    await voidEmailTokens(trx, user.id, 'reset-password', now)
    await deleteSessionsOfUser(trx, user.id)
    await markEmailVerified(trx, user.id, user.email, now)
    return { email: user.email, userId: user.id }
  })
  if (reset === 'suspended') return { kind: 'suspended' }
  if (reset === undefined) return { kind: 'invalid' }
  const { email, userId } = reset
  await audit.record({ event: 'user.password_reset', userId, actorId: userId, detail: 'Every session ended' })
  return { kind: 'reset', email, mailSent: await ctx.mailer.send(passwordChangedMail(ctx, email, 'reset')) }
}
