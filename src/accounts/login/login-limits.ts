import type { Db } from '../../db/connect.js'
import type { Clock } from '../../lib/clock.js'
import { RATE_LIMITS, rateRule } from '../../limits/policy.js'
import type { SlotRule } from '../../limits/rate-limiter.js'
import type { AccountLimits } from '../context.js'
import { type DeviceCookieOwner, verifyDeviceCookie } from './device-cookies.js'

/* Which limits a log-in attempt counts under (docs/operating/limits.md), password or second step. */

export type ThrottleKind = 'account-address' | 'address' | 'account-under-attack' | 'device' | 'address-attempts' | 'second-factor'

export type ThrottleRule = SlotRule & { readonly kind: ThrottleKind }

/**
 * The limits an attempt for `user` counts under (src/accounts/login/login.ts logIn); the log-in's second step
 * (src/accounts/second-factor/pending-login.ts) counts its wrong codes under the same ones. `device`: the
 * nonce of a valid device cookie of the account.
 */
export async function logInRules(
  db: Db,
  clock: Clock,
  limits: AccountLimits,
  user: DeviceCookieOwner | undefined,
  attempt: { readonly email: string; readonly address: string; readonly deviceCookie: string | undefined },
): Promise<{ device: string | undefined; rules: ThrottleRule[] }> {
  const device = user ? await verifyDeviceCookie(db, clock, attempt.deviceCookie, user) : undefined
  const rules: ThrottleRule[] =
    device !== undefined
      ? [{ kind: 'device', ...rateRule(RATE_LIMITS.loginDevice, device, limits) }]
      : [
          { kind: 'address', ...rateRule(RATE_LIMITS.loginAddress, attempt.address, limits) },
          { kind: 'account-address', ...rateRule(RATE_LIMITS.loginAccountAddress, `${attempt.address}:${attempt.email}`, limits) },
          { kind: 'account-under-attack', ...rateRule(RATE_LIMITS.loginAccount, attempt.email, limits) },
        ]
  return { device, rules }
}
