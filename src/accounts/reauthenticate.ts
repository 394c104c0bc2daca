import type { AuditTrail } from '../audit/audit-log.js'
import { sha256Hex } from '../lib/crypto.js'
import { verifyPassword } from '../lib/passwords.js'
import { RATE_LIMITS, rateRule } from '../limits/policy.js'
import { releaseSlots, takeSlots } from '../limits/rate-limiter.js'
import { markReauthenticated } from '../repositories/sessions.js'
import { findUserById } from '../repositories/users.js'
import type { AccountContext } from './context.js'

export type Reauthentication =
  | { readonly kind: 'ok'; readonly email: string }
  | { readonly kind: 'wrong-password' }
  | { readonly kind: 'limited'; readonly retryAfterSeconds: number }

/**
 * The account's current password, asked again before changing the password or the email or
 * deleting the account, so that a session left open cannot be used to take the account over.
 * Failures count like log-in failures (LOGIN_FAILURE_LIMIT per 15 minutes, per account), so a
 * stolen session cannot be used to guess the password either; a success counts against nothing.
 */
export async function reauthenticate(ctx: AccountContext, userId: string, password: string): Promise<Reauthentication> {
  const slots = await takeSlots(ctx.db, ctx.clock, [rateRule(RATE_LIMITS.reauthentication, userId, ctx.limits)])
  if (!slots.allowed) return { kind: 'limited', retryAfterSeconds: slots.retryAfterSeconds }
  const user = await findUserById(ctx.db, userId)
  if (!user || !(await verifyPassword(user.password_hash, password))) return { kind: 'wrong-password' }
  await releaseSlots(ctx.db, slots.taken)
  return { kind: 'ok', email: user.email }
}

/**
 * What proves it is still the account's owner at the keyboard ("sudo mode"). Only the password
 * for now; a current TOTP code or a passkey assertion will be further kinds, each checked here.
 */
export type ReauthProof = { readonly kind: 'password'; readonly password: string }

export type SessionConfirmation = { readonly kind: 'confirmed' } | Exclude<Reauthentication, { kind: 'ok' }>

/**
 * "Confirm it's you" (GET /reauth): a proof accepted marks the browser's session re-authenticated
 * now, which opens the sensitive actions for REAUTH_WINDOW_MINUTES (src/http/recent-auth.ts,
 * docs/decisions/012-reauthentication-and-policy.md). Wrong passwords count like the Account
 * pages' (reauthenticate above) and are recorded, since only someone holding the session makes them.
 */
export async function confirmSession(
  ctx: AccountContext,
  confirm: { userId: string; sessionId: string; proof: ReauthProof },
  audit: AuditTrail,
): Promise<SessionConfirmation> {
  const check = await reauthenticate(ctx, confirm.userId, confirm.proof.password)
  if (check.kind !== 'ok') {
    if (check.kind === 'wrong-password') await audit.record({ event: 'user.reauthentication_failed', userId: confirm.userId })
    return check
  }
  await markReauthenticated(ctx.db, sha256Hex(confirm.sessionId), ctx.clock())
  await audit.record({ event: 'user.reauthenticated', userId: confirm.userId, detail: 'with the password' })
  return { kind: 'confirmed' }
}
