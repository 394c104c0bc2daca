import { type AuditTrail, auditDetail } from '../../audit/audit-log.js'
import { ALERTS, RATE_LIMITS, alertRule, rateRule } from '../../limits/policy.js'
import { takeSlots } from '../../limits/rate-limiter.js'
import { clearFailedCodes, countFailedCode, findFailedCodes } from '../../repositories/totp-failures.js'
import type { AccountContext } from '../context.js'
import type { DeviceCookieOwner } from '../login/device-cookies.js'
import { type ThrottleRule, logInRules } from '../login/login-limits.js'
import { secondFactorLockedMail, wrongSecondFactorCodesMail } from '../mails.js'
import { isTotpCode } from './totp.js'

/*
 * What bounds guessing the second factor (docs/decisions/011-second-factor.md, "Guessing the
 * second step"; docs/operating/limits.md). A six-digit code matches one guess in about 333,000
 * (three steps are accepted), so the number of guesses, not their speed, is what must be bounded:
 * - every wrong code, at the log-in's second step or at /reauth, counts in one bucket per
 *   account (RATE_LIMITS.secondFactorAccount), whatever device cookie or address it comes with;
 * - wrong codes since the last proven second factor are counted on the authenticator app's row,
 *   and at SECOND_FACTOR_LOCK_AFTER its codes are refused, unchecked, until a recovery code or a
 *   passkey (which cannot be guessed) proves the owner;
 * - the owner is mailed at the first wrong code of a burst (one mail an hour at most, ALERTS)
 *   and when the lock engages, since a wrong code after the right password means the password
 *   is known to someone.
 */

/** The account's bucket of wrong second-factor codes and assertions, counted wherever they are typed. */
export function secondFactorAccountRule(ctx: AccountContext, userId: string): ThrottleRule {
  return { kind: 'second-factor', ...rateRule(RATE_LIMITS.secondFactorAccount, userId, ctx.limits) }
}

/**
 * The limits an attempt at the log-in's second step counts under: the log-in's own (the device
 * cookie's, or the address's and account's without one), and always the account's bucket, so
 * that a device cookie changes which log-in limits count but never exempts the second step.
 */
export async function secondStepRules(
  ctx: AccountContext,
  user: DeviceCookieOwner & { email: string },
  attempt: { readonly address: string; readonly deviceCookie: string | undefined },
): Promise<ThrottleRule[]> {
  const { rules } = await logInRules(ctx.db, ctx.clock, ctx.limits, user, { ...attempt, email: user.email })
  return [...rules, secondFactorAccountRule(ctx, user.id)]
}

/** A code as typed, as src/accounts/second-factor/factors.ts reads it: spaces dropped. */
const normalised = (typed: string) => typed.trim().replace(/\s/g, '')

/** Whether `typed` is an authenticator-app code while the account's app is locked: refused without being checked. */
export async function totpCodeLocked(ctx: AccountContext, userId: string, typed: string): Promise<boolean> {
  if (!isTotpCode(normalised(typed))) return false
  const failed = await findFailedCodes(ctx.db, userId)
  return failed !== undefined && failed >= ctx.limits.secondFactorLockAfter
}

/**
 * A wrong code for the account (TOTP or recovery code): one more toward the lock, which engages
 * at exactly SECOND_FACTOR_LOCK_AFTER (recorded and mailed once); otherwise the owner is mailed
 * at the first wrong code of a burst. `address`: the client's, as the mail names it.
 */
export async function wrongSecondFactorCode(
  ctx: AccountContext,
  user: { readonly id: string; readonly email: string },
  address: string | null,
  audit: AuditTrail,
): Promise<void> {
  const failed = await countFailedCode(ctx.db, user.id)
  const at = ctx.clock()
  if (failed === ctx.limits.secondFactorLockAfter) {
    await audit.record({ event: 'user.second_factor_locked', userId: user.id, detail: auditDetail.secondFactorLocked(failed) })
    await ctx.mailer.send(secondFactorLockedMail(ctx, user.email, { at, address, failed }))
    return
  }
  const alert = await takeSlots(ctx.db, ctx.clock, [alertRule(ALERTS.secondFactorFailures, user.id)])
  if (!alert.allowed) return
  await audit.record({ event: 'user.second_factor_failures_mailed', userId: user.id, detail: auditDetail.secondFactorFailuresMailed() })
  await ctx.mailer.send(wrongSecondFactorCodesMail(ctx, user.email, { at, address }))
}

/** A second factor was proven (any kind): the count of wrong codes starts again, and a lock is lifted. */
export function secondFactorProven(ctx: AccountContext, userId: string): Promise<void> {
  return clearFailedCodes(ctx.db, userId)
}
