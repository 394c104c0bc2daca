import type { AuditTrail } from '../../audit/audit-log.js'
import { sha256Hex } from '../../lib/crypto.js'
import { RATE_LIMITS, rateRule } from '../../limits/policy.js'
import { releaseSlots, takeSlots } from '../../limits/rate-limiter.js'
import { markReauthenticated } from '../../repositories/sessions.js'
import { findUserById } from '../../repositories/users.js'
import type { AccountContext } from '../context.js'
import { type Reauthentication, reauthenticate } from './reauthenticate.js'
import { markSecondFactorUsed, sessionKeyOf } from './sessions.js'
import { isTotpCode } from '../second-factor/totp.js'
import { useSecondFactorCode } from '../second-factor/factors.js'
import { secondFactorAccountRule, secondFactorProven, totpCodeLocked, wrongSecondFactorCode } from '../second-factor/guessing.js'

/**
 * What proves it is still the account's owner at the keyboard ("sudo mode"): the password, or a
 * current code of the account's authenticator app (a factor, as the "password or factor
 * confirmation" asks; recovery codes are kept for a lost app, not spent on confirmations).
 */
export type ReauthProof = { readonly kind: 'password'; readonly password: string } | { readonly kind: 'code'; readonly code: string }

export type SessionConfirmation =
  | { readonly kind: 'confirmed' }
  | Exclude<Reauthentication, { kind: 'ok' }>
  | { readonly kind: 'wrong-code' }
  /** The authenticator app's codes are locked (SECOND_FACTOR_LOCK_AFTER): not checked, not counted. */
  | { readonly kind: 'locked' }

/**
 * A current TOTP code of the account. A wrong one counts like a wrong password
 * (RATE_LIMITS.reauthentication) and, as at the log-in's second step, in the account's bucket of
 * wrong codes and toward the app's lock (src/accounts/second-factor/guessing.ts): a stolen
 * session must not become a second, separate way to guess codes.
 */
async function reauthenticateWithCode(
  ctx: AccountContext,
  who: { userId: string; address: string | null },
  typed: string,
  audit: AuditTrail,
): Promise<Reauthentication | { kind: 'wrong-code' } | { kind: 'locked' }> {
  const { userId } = who
  if (await totpCodeLocked(ctx, userId, typed)) return { kind: 'locked' }
  const rules = [rateRule(RATE_LIMITS.reauthentication, userId, ctx.limits), secondFactorAccountRule(ctx, userId)]
  const slots = await takeSlots(ctx.db, ctx.clock, rules)
  if (!slots.allowed) return { kind: 'limited', retryAfterSeconds: slots.retryAfterSeconds }
  const code = typed.trim().replace(/\s/g, '')
  const user = await findUserById(ctx.db, userId)
  if (!user) return { kind: 'wrong-code' }
  if (!isTotpCode(code) || (await useSecondFactorCode(ctx, userId, code)) !== 'totp') {
    await wrongSecondFactorCode(ctx, user, who.address, audit)
    return { kind: 'wrong-code' }
  }
  await releaseSlots(ctx.db, slots.taken)
  await secondFactorProven(ctx, userId)
  return { kind: 'ok', email: user.email }
}

/**
 * "Confirm it's you" (GET /reauth): a proof accepted marks the browser's session re-authenticated
 * now, which opens the sensitive actions for REAUTH_WINDOW_MINUTES (src/http/recent-auth.ts,
 * docs/decisions/012-reauthentication-and-policy.md). Wrong passwords count like the Account
 * pages' (reauthenticate above) and are recorded, since only someone holding the session makes them.
 */
export async function confirmSession(
  ctx: AccountContext,
  confirm: { userId: string; address: string | null; sessionId: string; proof: ReauthProof },
  audit: AuditTrail,
): Promise<SessionConfirmation> {
  const { proof } = confirm
  const check =
    proof.kind === 'password'
      ? await reauthenticate(ctx, confirm.userId, proof.password)
      : await reauthenticateWithCode(ctx, confirm, proof.code, audit)
  if (check.kind !== 'ok') {
    if (check.kind !== 'limited' && check.kind !== 'locked')
      await audit.record({ event: 'user.reauthentication_failed', userId: confirm.userId })
    return check
  }
  await markReauthenticated(ctx.db, sha256Hex(confirm.sessionId), ctx.clock())
  // A code proves the factor to this session: REQUIRE_TWO_FACTOR counts it from now on (docs/decisions/012).
  if (proof.kind === 'code')
    await markSecondFactorUsed(ctx.db, confirm.sessionId === undefined ? undefined : sessionKeyOf(confirm.sessionId), 'totp')
  const how = proof.kind === 'password' ? 'with the password' : 'with an authenticator app code'
  await audit.record({ event: 'user.reauthenticated', userId: confirm.userId, detail: how })
  return { kind: 'confirmed' }
}
