import { type AuditTrail, auditDetail } from '../../audit/audit-log.js'
import type { Db } from '../../db/connect.js'
import type { Clock } from '../../lib/clock.js'
import { randomToken, sha256Hex } from '../../lib/crypto.js'
import { LIFETIMES } from '../../limits/policy.js'
import { releaseSlots, takeSlots } from '../../limits/rate-limiter.js'
import {
  deletePendingLogin,
  findPendingLogin,
  insertPendingLogin,
  takePendingLogin,
  takePendingTry,
} from '../../repositories/pending-logins.js'
import { countRecoveryCodes } from '../../repositories/recovery-codes.js'
import { type SecondFactorSummary, secondFactorSummary } from '../../repositories/second-factor.js'
import { findUserById } from '../../repositories/users.js'
import type { AccountContext } from '../context.js'
import { issueDeviceCookie } from '../login/device-cookies.js'
import type { ThrottleKind } from '../login/login-limits.js'
import { recoveryCodeUsedMail } from '../mails.js'
import { verifyPasskeyForUser } from './passkey-login.js'
import { secondFactorProven, secondStepRules, totpCodeLocked, wrongSecondFactorCode } from './guessing.js'
import { type FactorMethod, useSecondFactorCode } from './factors.js'

/*
 * The log-in's second step (docs/accounts.md "Two-factor authentication", docs/decisions/011-second-factor.md).
 * The right password for an account with a second factor starts a pending log-in: a row that
 * lives LIFETIMES.pendingLoginMs (5 minutes), named by a random id that only the browser's cookie holds (the database
 * keeps its digest). The second step is bound to that row, so a factor proves nothing without
 * the password step of the same browser, and a device cookie never stands in for it. Whatever
 * proves the factor (a TOTP or recovery code here; a passkey assertion elsewhere) ends the row
 * through finishSecondFactor, which is what issues the device cookie; the edge then starts the
 * session with the methods it returns (RFC 8176 amr).
 */

/** The cookie's Max-Age, LIFETIMES.pendingLoginMs of src/limits/policy.ts in seconds. */
export const PENDING_LOGIN_MAX_AGE_SECONDS = LIFETIMES.pendingLoginMs / 1000
/** Codes (or assertions) one pending log-in may have checked; then it ends and the password is asked again. */
export const PENDING_LOGIN_MAX_FAILURES = 5

type ProvenMethod = FactorMethod | 'passkey'

/**
 * RFC 8176 2: a TOTP code is `otp`; a recovery code is a one-time password too, so also `otp`; a
 * passkey is a proof of possession of a key (`hwk`) that its authenticator keeps.
 */
const AMR: Record<ProvenMethod, readonly string[]> = {
  totp: ['pwd', 'otp', 'mfa'],
  'recovery-code': ['pwd', 'otp', 'mfa'],
  passkey: ['pwd', 'hwk', 'mfa'],
}
const METHOD_WORDS: Record<ProvenMethod, string> = {
  totp: 'an authenticator app code',
  'recovery-code': 'a recovery code',
  passkey: 'a passkey',
}

/** After the right password (src/accounts/login/login.ts): the pending log-in's id, for the browser's cookie. */
export async function beginPendingLogIn(db: Db, clock: Clock, userId: string): Promise<string> {
  const id = randomToken(32)
  const now = clock()
  await insertPendingLogin(db, { idHash: sha256Hex(id), userId, now, expiresAt: new Date(now.getTime() + LIFETIMES.pendingLoginMs) })
  return id
}

const idHashOf = (pendingId: string | undefined) =>
  pendingId === undefined || pendingId.length === 0 || pendingId.length > 100 ? undefined : sha256Hex(pendingId)

/** The account a live pending log-in is for; undefined when the id names none (expired, ended, forged). */
export async function pendingLogInOf(ctx: AccountContext, pendingId: string | undefined): Promise<{ userId: string } | undefined> {
  const idHash = idHashOf(pendingId)
  const row = idHash === undefined ? undefined : await findPendingLogin(ctx.db, idHash, ctx.clock())
  return row && { userId: row.user_id }
}

/** Which factors the second step may offer the pending log-in's account; undefined when it names none. */
export async function pendingLogInFactors(ctx: AccountContext, pendingId: string | undefined): Promise<SecondFactorSummary | undefined> {
  const pending = await pendingLogInOf(ctx, pendingId)
  return pending && secondFactorSummary(ctx.db, pending.userId)
}

export type FinishedLogIn =
  | { readonly kind: 'ok'; readonly userId: string; readonly deviceCookie: string; readonly amr: readonly string[] }
  /** The pending log-in ended (expired, used, too many failures, account deleted): start again. */
  | { readonly kind: 'expired' }
  /** Suspended by an operator since the password step. */
  | { readonly kind: 'suspended' }

/** A second factor, proven by its caller for the pending log-in's account. */
export interface ProvenFactor {
  /** RFC 8176 methods of the whole log-in, e.g. ['pwd', 'otp', 'mfa']. */
  readonly amr: readonly string[]
  /** How the Security log names the factor, e.g. 'a recovery code'. */
  readonly method: string
}

/**
 * Ends the pending log-in after its second factor was proven: one conditional DELETE, so two
 * concurrent completions cannot both log in. Records `user.logged_in` and issues the device
 * cookie; the caller starts the session (accounts.completeLogIn) with `amr`.
 */
export async function finishSecondFactor(
  ctx: AccountContext,
  pendingId: string | undefined,
  factor: ProvenFactor,
  audit: AuditTrail,
): Promise<FinishedLogIn> {
  const idHash = idHashOf(pendingId)
  const userId = idHash === undefined ? undefined : await takePendingLogin(ctx.db, idHash, ctx.clock())
  const user = userId === undefined ? undefined : await findUserById(ctx.db, userId)
  if (!user) return { kind: 'expired' }
  if (user.suspended_at !== null) return { kind: 'suspended' }
  await audit.record({
    event: 'user.logged_in',
    userId: user.id,
    actorId: user.id,
    detail: auditDetail.loggedInWithSecondFactor(factor.method),
  })
  return { kind: 'ok', userId: user.id, deviceCookie: await issueDeviceCookie(ctx.db, ctx.clock, user), amr: factor.amr }
}

export interface SecondFactorAttempt {
  /** A TOTP or recovery code as typed; ignored when `passkey` is given. */
  readonly code: string
  /** A passkey's assertion, for the challenge issued by passkeyOptionsForUser (src/accounts/second-factor/passkey-login.ts). */
  readonly passkey?: { readonly response: unknown; readonly challengeId: unknown }
  /** The client's address key (src/limits/client-address.ts). */
  readonly address: string
  readonly deviceCookie: string | undefined
}

export type SecondFactorResult =
  | FinishedLogIn
  | { readonly kind: 'refused'; readonly throttle: ThrottleKind; readonly retryAfterSeconds: number }
  /** A wrong code; `ended` when it was the pending log-in's last try. */
  | { readonly kind: 'failed'; readonly ended: boolean; readonly filled: readonly ThrottleKind[] }
  /** An authenticator-app code while the app is locked (SECOND_FACTOR_LOCK_AFTER): not checked, not counted. */
  | { readonly kind: 'locked' }

/**
 * A TOTP or recovery code, or a passkey's assertion, for the pending log-in. Wrong ones count like
 * wrong passwords, under the limits of src/accounts/login/login-limits.ts, and always in the account's
 * own bucket of wrong codes (src/accounts/second-factor/guessing.ts): a slot is taken before the
 * check and given back on success. Each check also takes one of the pending log-in's
 * PENDING_LOGIN_MAX_FAILURES tries first, in one statement, so concurrent submissions cannot
 * pass that cap either; the last wrong one ends the pending log-in.
 */
export async function submitSecondFactorCode(
  ctx: AccountContext,
  pendingId: string | undefined,
  attempt: SecondFactorAttempt,
  audit: AuditTrail,
): Promise<SecondFactorResult> {
  const pending = await pendingLogInOf(ctx, pendingId)
  const user = pending && (await findUserById(ctx.db, pending.userId))
  const idHash = idHashOf(pendingId)
  if (!user || idHash === undefined) return { kind: 'expired' }
  if (attempt.passkey === undefined && (await totpCodeLocked(ctx, user.id, attempt.code))) return { kind: 'locked' }
  const rules = await secondStepRules(ctx, user, attempt)
  const slots = await takeSlots(ctx.db, ctx.clock, rules)
  if (!slots.allowed) {
    const refused = rules.find((r) => r.key === slots.refused.key)
    return { kind: 'refused', throttle: refused?.kind ?? 'address', retryAfterSeconds: slots.retryAfterSeconds }
  }
  const tryNumber = await takePendingTry(ctx.db, idHash, PENDING_LOGIN_MAX_FAILURES, ctx.clock())
  if (tryNumber === undefined) {
    await releaseSlots(ctx.db, slots.taken)
    return { kind: 'expired' }
  }
  const method = await proveFactor(ctx, user.id, attempt, audit)
  if (!method) {
    await audit.record({ event: 'user.login_failed', userId: user.id, detail: auditDetail.secondFactorFailed() })
    if (attempt.passkey === undefined) await wrongSecondFactorCode(ctx, user, attempt.address, audit)
    const ended = tryNumber >= PENDING_LOGIN_MAX_FAILURES
    if (ended) await deletePendingLogin(ctx.db, idHash)
    return { kind: 'failed', ended, filled: rules.filter((r) => slots.filled.some((f) => f.key === r.key)).map((r) => r.kind) }
  }
  await releaseSlots(ctx.db, slots.taken)
  await secondFactorProven(ctx, user.id)
  const finished = await finishSecondFactor(ctx, pendingId, { amr: AMR[method], method: METHOD_WORDS[method] }, audit)
  if (method === 'recovery-code') await recoveryCodeUsed(ctx, user, audit)
  return finished
}

/** The factor the attempt proves for the account, or undefined: a wrong code, or an assertion that did not verify. */
async function proveFactor(
  ctx: AccountContext,
  userId: string,
  attempt: SecondFactorAttempt,
  audit: AuditTrail,
): Promise<ProvenMethod | undefined> {
  if (attempt.passkey === undefined) return useSecondFactorCode(ctx, userId, attempt.code)
  const check = await verifyPasskeyForUser(ctx, userId, attempt.passkey, audit)
  return check.kind === 'ok' ? 'passkey' : undefined
}

/** A recovery code was used up: recorded, and the owner told how many are left. */
async function recoveryCodeUsed(ctx: AccountContext, user: { id: string; email: string }, audit: AuditTrail): Promise<void> {
  const left = await countRecoveryCodes(ctx.db, user.id)
  await audit.record({ event: 'user.recovery_code_used', userId: user.id, actorId: user.id, detail: auditDetail.recoveryCodesLeft(left) })
  await ctx.mailer.send(recoveryCodeUsedMail(ctx, user.email, left))
}
