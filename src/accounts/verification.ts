import type { AuditTrail } from '../audit/audit-log.js'
import { RATE_LIMITS, rateRule } from '../limits/policy.js'
import { takeSlots } from '../limits/rate-limiter.js'
import { sha256Hex } from '../lib/crypto.js'
import { findUserById, lockUser, markEmailVerified } from '../repositories/users.js'
import type { AccountContext } from './context.js'
import { issueEmailLink, peekEmailLink, useEmailLink } from './email-links.js'
import { verificationMail } from './mails.js'
import { evictEarlierHolders } from './recovery.js'

export type ResendResult =
  { readonly kind: 'sent' | 'not-sent' | 'already-verified' } | { readonly kind: 'limited'; readonly retryAfterSeconds: number }

/**
 * "Resend verification email": a new link to the account's address, at most
 * VERIFICATION_EMAIL_LIMIT an hour per account. Earlier links keep working until they expire.
 */
export async function resendVerification(ctx: AccountContext, userId: string): Promise<ResendResult> {
  const user = await findUserById(ctx.db, userId)
  if (!user || user.email_verified_at !== null) return { kind: 'already-verified' }
  const slots = await takeSlots(ctx.db, ctx.clock, [rateRule(RATE_LIMITS.verificationEmail, userId, ctx.limits)])
  if (!slots.allowed) return { kind: 'limited', retryAfterSeconds: slots.retryAfterSeconds }
  const now = ctx.clock()
  const link = await issueEmailLink(ctx.db, ctx.publicUrl, { purpose: 'verify-email', userId, email: user.email, now })
  return { kind: (await ctx.mailer.send(verificationMail(ctx, user.email, link))) ? 'sent' : 'not-sent' }
}

/** Whether the verification link works (unused, unexpired), without using it: the page that asks to confirm. */
export async function verificationLinkWorks(ctx: AccountContext, token: unknown): Promise<boolean> {
  return (await peekEmailLink(ctx.db, 'verify-email', token, ctx.clock())) !== undefined
}

/**
 * Uses the verification link: the account's address is verified if it is still the address
 * the link was sent to. The first proof of the account's address evicts whoever opened the
 * account with it (evictEarlierHolders, README "Account recovery"); the browser that proves it
 * (`sessionId`, when logged in to this account) stays logged in. Returns the account's id, or
 * undefined when the link does not work.
 */
export async function confirmVerification(
  ctx: AccountContext,
  token: unknown,
  audit: AuditTrail,
  sessionId?: string,
): Promise<{ userId: string } | undefined> {
  const now = ctx.clock()
  const link = await peekEmailLink(ctx.db, 'verify-email', token, now)
  if (!link) return undefined
  const verified = await ctx.db.transaction().execute(async (trx) => {
    // Locked first: no code or token can be issued to the account while it is claimed.
    const user = await lockUser(trx, link.user_id)
    const used = user && (await useEmailLink(trx, 'verify-email', token, now, user.id))
    if (!user || !used || !(await markEmailVerified(trx, user.id, used.email, now))) return undefined
    if (user.email_verified_at !== null) return { userId: user.id, revoked: undefined }
    const keepSessionHash = sessionId === undefined ? undefined : sha256Hex(sessionId)
    return { userId: user.id, revoked: await evictEarlierHolders(trx, ctx.bus, { userId: user.id, keepSessionHash }, now) }
  })
  if (!verified) return undefined
  // A detail only when someone was evicted: most first proofs are a new account's own.
  const evicted = verified.revoked
  await audit.record({
    event: 'user.email_verified',
    userId: verified.userId,
    actorId: verified.userId,
    ...(evicted === undefined || evicted.tokens + evicted.sessions === 0
      ? {}
      : {
          detail: `First proof of the address: every grant revoked, ${evicted.tokens} tokens revoked, ${evicted.sessions} other sessions ended`,
        }),
  })
  return { userId: verified.userId }
}
