import type { AuditTrail } from '../../audit/audit-log.js'
import { hashPassword } from '../../lib/passwords.js'
import { RATE_LIMITS, rateRule } from '../../limits/policy.js'
import { takeSlots } from '../../limits/rate-limiter.js'
import { findUserByEmail, lockUserForChange, markEmailVerified, setPasswordHash } from '../../repositories/users.js'
import type { AccountContext } from '../context.js'
import { issueEmailLink, peekEmailLink, useEmailLink } from '../sign-up/email-links.js'
import { passwordChangedMail, passwordResetMail, passwordResetNoAccountMail } from '../mails.js'
import { closeOtherDoors, evictEarlierHolders, forgetUnprovenSetUp } from './recovery.js'
import { endSessionsOfUser } from '../sessions/end-sessions.js'

export type ResetRequestResult =
  { readonly kind: 'done'; readonly mailSent: boolean } | { readonly kind: 'limited'; readonly retryAfterSeconds: number }

/**
 * "Forgot your password?". Limited per client address and per email typed (whether or not it
 * has an account). The same answer, and the same work, for known and unknown emails: a known
 * one gets a link valid for 1 hour, an unknown one a mail saying no account uses it.
 */
export async function requestPasswordReset(ctx: AccountContext, email: string, address: string): Promise<ResetRequestResult> {
  const slots = await takeSlots(ctx.db, ctx.clock, [
    rateRule(RATE_LIMITS.passwordResetAddress, address, ctx.limits),
    rateRule(RATE_LIMITS.passwordResetEmail, email, ctx.limits),
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
 * transaction: the link is used up, every other mailed link and every device cookie of the
 * account is void (closeOtherDoors), every session of the account ends, with the refresh-token
 * families approved in it (whoever held one must log in with the new password), and the address
 * counts as verified (the link reached it).
 * `revokeAccess` ("Also revoke every application's access", checked by default), or the first
 * proof of an address the account never proved, also revokes every grant, token, code and open
 * consent request of the account (evictEarlierHolders); the first proof also removes every second
 * factor and the profile (forgetUnprovenSetUp). Then a notice goes to the address.
 */
export async function resetPassword(
  ctx: AccountContext,
  token: unknown,
  reset: { newPassword: string; revokeAccess: boolean },
  audit: AuditTrail,
): Promise<ResetResult> {
  // Checked before the argon2 work, which a dead link should not cost.
  if ((await peekEmailLink(ctx.db, 'reset-password', token, ctx.clock())) === undefined) return { kind: 'invalid' }
  const passwordHash = await hashPassword(reset.newPassword)
  const now = ctx.clock()
  const done = await ctx.db.transaction().execute(async (trx) => {
    const link = await peekEmailLink(trx, 'reset-password', token, now)
    // Locked first: no code or token can be issued to the account while it is recovered.
    const user = link && (await lockUserForChange(trx, link.user_id))
    if (!user || !(await useEmailLink(trx, 'reset-password', token, now, user.id))) return undefined
    // A link sent to an address the account has left is void.
    if (user.email !== link.email) return undefined
    // Under the row lock that suspendUser takes: a suspension committed first is seen here.
    if (user.suspended_at !== null) return 'suspended'
    await setPasswordHash(trx, user.id, passwordHash)
    // The first proof of the address: whatever factor or profile was set up before is not the owner's.
    if (user.email_verified_at === null) await forgetUnprovenSetUp(trx, user.id, now)
    const evict = reset.revokeAccess || user.email_verified_at === null
    const revoked = evict ? await evictEarlierHolders(trx, ctx.bus, { userId: user.id }, now) : undefined
    await closeOtherDoors(trx, user.id, now)
    await endSessionsOfUser({ db: trx, bus: ctx.bus }, user.id, now)
    await markEmailVerified(trx, user.id, user.email, now)
    return { email: user.email, userId: user.id, revoked }
  })
  if (done === 'suspended') return { kind: 'suspended' }
  if (done === undefined) return { kind: 'invalid' }
  const { email, userId, revoked } = done
  const detail = revoked === undefined ? 'Every session ended' : `Every session ended, every grant and ${revoked.tokens} tokens revoked`
  await audit.record({ event: 'user.password_reset', userId, actorId: userId, detail })
  return { kind: 'reset', email, mailSent: await ctx.mailer.send(passwordChangedMail(ctx, email, 'reset')) }
}
