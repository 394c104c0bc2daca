import type { AuditTrail } from '../../audit/audit-log.js'
import { RATE_LIMITS, rateRule } from '../../limits/policy.js'
import { takeSlots } from '../../limits/rate-limiter.js'
import type { Db } from '../../db/connect.js'
import { hashPassword } from '../../lib/passwords.js'
import { findUserById, lockUser, markEmailVerified, setPasswordHash } from '../../repositories/users.js'
import type { AccountContext } from '../context.js'
import { issueEmailLink, peekEmailLink, useEmailLink } from './email-links.js'
import { verificationMail } from '../mails.js'
import { evictEarlierHolders, forgetUnprovenSetUp } from '../recovery/recovery.js'

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

export interface VerificationLink {
  /** The address the link proves. */
  readonly email: string
  /**
   * The first proof of the address, made without the account's own session: whoever opens the
   * link chooses a new password there, since the one set at sign-up may be a squatter's.
   */
  readonly needsPassword: boolean
}

/**
 * What the verification link's page offers, without using the link: undefined when it does not
 * work (unused, unexpired). `loggedInUserId`: the account of the browser that opened it, if any.
 */
export async function verificationLinkState(
  ctx: AccountContext,
  token: unknown,
  loggedInUserId: string | undefined,
): Promise<VerificationLink | undefined> {
  const link = await peekEmailLink(ctx.db, 'verify-email', token, ctx.clock())
  const user = link && (await findUserById(ctx.db, link.user_id))
  if (!link || !user) return undefined
  return { email: link.email, needsPassword: user.email_verified_at === null && loggedInUserId !== user.id }
}

export type VerificationResult =
  | { readonly kind: 'verified'; readonly userId: string }
  | { readonly kind: 'invalid' }
  /** A first proof without the account's own session, and no new password given: nothing changed, the link stays unused. */
  | { readonly kind: 'needs-password' }

/** Rolls back the transaction that used the link: a first proof without the account's session needs a new password. */
class PasswordNeeded extends Error {}

/** The browser's own session (its stored digest), when it is logged in. */
export interface BrowserSessionRef {
  readonly userId: string
  readonly sessionKey: string
}

/**
 * Uses the verification link: the account's address is verified if it is still the address the
 * link was sent to. The first proof of the account's address evicts whoever opened the account
 * with it (docs/accounts.md "Account recovery", docs/decisions/010-account-recovery.md): grants, tokens,
 * sessions, device cookies (evictEarlierHolders), factors and profile (forgetUnprovenSetUp). The
 * browser that proves it with the account's own session stays logged in and keeps the password;
 * any other browser must choose a new password (`newPassword`, already checked against the rules),
 * set in the same transaction, so the password chosen at sign-up opens nothing any more.
 */
export async function confirmVerification(
  ctx: AccountContext,
  token: unknown,
  proof: { session: BrowserSessionRef | undefined; newPassword: string | undefined },
  audit: AuditTrail,
): Promise<VerificationResult> {
  const now = ctx.clock()
  const link = await peekEmailLink(ctx.db, 'verify-email', token, now)
  if (!link) return { kind: 'invalid' }
  // Hashed before the transaction: argon2's work should not hold the user's row lock.
  const passwordHash = proof.newPassword === undefined ? undefined : await hashPassword(proof.newPassword)
  let verified: Awaited<ReturnType<typeof proveAddress>>
  try {
    verified = await ctx.db
      .transaction()
      .execute((trx) => proveAddress(trx, ctx, { link, token, session: proof.session, passwordHash, now }))
  } catch (error) {
    if (error instanceof PasswordNeeded) return { kind: 'needs-password' }
    throw error
  }
  if (!verified) return { kind: 'invalid' }
  await audit.record({ event: 'user.email_verified', userId: verified.userId, actorId: verified.userId, ...firstProofDetail(verified) })
  return { kind: 'verified', userId: verified.userId }
}

/** The transaction of confirmVerification; undefined when the link does not work. */
async function proveAddress(
  trx: Db,
  ctx: AccountContext,
  use: { link: { user_id: string }; token: unknown; session: BrowserSessionRef | undefined; passwordHash: string | undefined; now: Date },
) {
  const { now } = use
  // Locked first: no code or token can be issued to the account while it is claimed.
  const user = await lockUser(trx, use.link.user_id)
  const used = user && (await useEmailLink(trx, 'verify-email', use.token, now, user.id))
  if (!user || !used || !(await markEmailVerified(trx, user.id, used.email, now))) return undefined
  if (user.email_verified_at !== null) return { userId: user.id, revoked: undefined, newPassword: false }
  const ownSession = use.session?.userId === user.id ? use.session.sessionKey : undefined
  if (ownSession === undefined) {
    if (use.passwordHash === undefined) throw new PasswordNeeded()
    await setPasswordHash(trx, user.id, use.passwordHash)
  }
  await forgetUnprovenSetUp(trx, user.id, now)
  const revoked = await evictEarlierHolders(trx, ctx.bus, { userId: user.id, keepSessionHash: ownSession }, now)
  return { userId: user.id, revoked, newPassword: ownSession === undefined }
}

/** A detail only when someone may have been evicted: most first proofs are a new account's own. */
function firstProofDetail(verified: { revoked: { tokens: number; sessions: number } | undefined; newPassword: boolean }) {
  const evicted = verified.revoked
  if (evicted === undefined || (evicted.tokens + evicted.sessions === 0 && !verified.newPassword)) return {}
  const password = verified.newPassword ? 'a new password chosen, ' : ''
  return {
    detail: `First proof of the address: ${password}every factor removed, every grant revoked, ${evicted.tokens} tokens revoked, ${evicted.sessions} other sessions ended`,
  }
}
