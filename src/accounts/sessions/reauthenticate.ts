import { verifyPassword } from '../../lib/passwords.js'
import { RATE_LIMITS, rateRule } from '../../limits/policy.js'
import { releaseSlots, takeSlots } from '../../limits/rate-limiter.js'
import { findUserById } from '../../repositories/users.js'
import type { AccountContext } from '../context.js'

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
