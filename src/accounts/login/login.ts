import { type AuditTrail, auditDetail } from '../../audit/audit-log.js'
import type { AccountLimits } from '../context.js'
import type { Db } from '../../db/connect.js'
import type { Clock } from '../../lib/clock.js'
import { dummyPasswordHash, verifyPassword } from '../../lib/passwords.js'
import { RATE_LIMITS, rateRule } from '../../limits/policy.js'
import { releaseSlots, takeSlots } from '../../limits/rate-limiter.js'
import { findUserByEmail } from '../../repositories/users.js'
import { issueDeviceCookie } from './device-cookies.js'
import { type ThrottleKind, type ThrottleRule, logInRules } from './login-limits.js'
import { beginPendingLogIn } from '../second-factor/pending-login.js'

export type { ThrottleKind } from './login-limits.js'

export interface LogInAttempt {
  /** Lower-cased, as stored; may name no account. */
  readonly email: string
  /** Undefined when the form was not valid: such an attempt fails, after the same work. */
  readonly password: string | undefined
  /** The client's address key (src/limits/client-address.ts). */
  readonly address: string
  /** The device cookie the browser sent, if any. */
  readonly deviceCookie: string | undefined
}

export type LogInResult =
  | { readonly kind: 'ok'; readonly userId: string; readonly deviceCookie: string }
  /**
   * The right password for an account with a second factor: no session and no device cookie yet,
   * only a pending log-in (src/accounts/second-factor/pending-login.ts) whose id the browser keeps.
   */
  | { readonly kind: 'second-factor'; readonly pendingId: string }
  | { readonly kind: 'refused'; readonly throttle: ThrottleKind; readonly retryAfterSeconds: number }
  | { readonly kind: 'failed'; readonly filled: readonly ThrottleKind[] }
  /** The right password for an account an operator suspended: refused, and no device cookie. */
  | { readonly kind: 'suspended' }

/**
 * Log-in throttling after OWASP's "Slow Down Online Guessing Attacks with Device Cookies"
 * (docs/operating/limits.md). Only failures count: every attempt takes a slot under its
 * limits before the password is checked (so parallel guesses cannot overshoot a limit) and a
 * success gives them back — except one high limit per address that counts every attempt, since
 * each costs an argon2 hash (RATE_LIMITS.loginAddressAttempts). A browser holding a valid
 * device cookie for the account is limited per device only, so strangers' failures never lock its owner out; any other is limited per
 * address (password spraying), per (account, address), and per account, whose limit marks the
 * account "under attack". Keys name the email, never whether it has an account, and an unknown
 * email costs the same argon2 work, so neither answer nor timing reveals which emails exist.
 *
 * Every attempt that is checked is recorded once: `user.logged_in`, or `user.login_failed` on the
 * account's Security log, or, for an email with no account, a row with no account and without the
 * email (people type passwords into the email field), so known and unknown emails cost the same
 * statements. Attempts refused by a limit are not checked, and not recorded: they cost an
 * attacker nothing, and the failures that filled the limit are in the log already.
 */
export async function logIn(db: Db, clock: Clock, limits: AccountLimits, attempt: LogInAttempt, audit: AuditTrail): Promise<LogInResult> {
  const user = await findUserByEmail(db, attempt.email)
  const { device, rules: failureRules } = await logInRules(db, clock, limits, user, attempt)
  // Kept after a success too, unlike the failure limits after it (RATE_LIMITS.loginAddressAttempts).
  const everyAttempt: ThrottleRule = { kind: 'address-attempts', ...rateRule(RATE_LIMITS.loginAddressAttempts, attempt.address, limits) }
  const rules = [everyAttempt, ...failureRules]
  const slots = await takeSlots(db, clock, rules)
  if (!slots.allowed) {
    const refused = rules.find((r) => r.key === slots.refused.key)
    return { kind: 'refused', throttle: refused?.kind ?? 'address', retryAfterSeconds: slots.retryAfterSeconds }
  }

  const ok = await verifyPassword(user?.password_hash ?? (await dummyPasswordHash()), attempt.password ?? '')
  if (!user || !ok || attempt.password === undefined) {
    await audit.record({ event: 'user.login_failed', userId: user?.id ?? null, detail: auditDetail.loginFailed(user !== undefined) })
    return { kind: 'failed', filled: rules.filter((r) => slots.filled.some((f) => f.key === r.key)).map((r) => r.kind) }
  }
  await releaseSlots(
    db,
    failureRules.map((r) => r.key),
  )
  if (user.suspended_at !== null) return { kind: 'suspended' }
  if (user.second_factor) return { kind: 'second-factor', pendingId: await beginPendingLogIn(db, clock, user.id) }
  await audit.record({ event: 'user.logged_in', userId: user.id, actorId: user.id, detail: auditDetail.loggedIn(device !== undefined) })
  return { kind: 'ok', userId: user.id, deviceCookie: await issueDeviceCookie(db, clock, user) }
}
