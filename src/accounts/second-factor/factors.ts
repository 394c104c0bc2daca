import { type AuditTrail, auditDetail } from '../../audit/audit-log.js'
import { LIFETIMES, RATE_LIMITS, rateRule } from '../../limits/policy.js'
import { releaseSlots, takeSlots } from '../../limits/rate-limiter.js'
import { consumeRecoveryCode, countRecoveryCodes, replaceRecoveryCodes } from '../../repositories/recovery-codes.js'
import { refreshSecondFactor } from '../../repositories/second-factor.js'
import {
  advanceTotpStep,
  deleteTotpEnrolment,
  deleteTotpSecret,
  findTotpEnrolment,
  findTotpSecret,
  insertTotpSecret,
  putTotpEnrolment,
} from '../../repositories/totp.js'
import { bumpCredentialVersion, findUserById, lockUserForChange } from '../../repositories/users.js'
import type { RevocationContext } from '../../revocation/revoke.js'
import { passwordCannotBeRight } from '../account.js'
import type { AccountContext } from '../context.js'
import { recoveryCodesRegeneratedMail, totpDisabledMail, totpEnabledMail } from '../mails.js'
import { type Reauthentication, reauthenticate } from '../sessions/reauthenticate.js'
import { endSessionsOfUser } from '../sessions/end-sessions.js'
import { newRecoveryCodes, recoveryCodeHash } from './recovery-codes.js'
import { groupedSecret, isTotpCode, newTotpSecret, totpStep, totpUri } from './totp.js'

/*
 * The authenticator app (TOTP) and recovery codes of an account (docs/accounts.md "Two-factor
 * authentication", docs/decisions/011-second-factor.md): set up, confirmed with a code, turned
 * off, recovery codes regenerated; and the check of a code, shared by the log-in's second step.
 */

/**
 * The secret a sealed value holds; undefined without one, or when it was sealed under another
 * key (SECRET_KEY changed, key file lost): then no code matches and the owner logs in with a
 * recovery code (docs/accounts.md "Two-factor authentication").
 */
function openSecret(ctx: AccountContext, sealed: string | undefined): string | undefined {
  if (sealed === undefined) return undefined
  try {
    return ctx.sealedBox.open(sealed)
  } catch {
    return undefined
  }
}

export interface SecondFactorStatus {
  readonly totp: boolean
  readonly recoveryCodesLeft: number
}

export async function secondFactorStatus(ctx: AccountContext, userId: string): Promise<SecondFactorStatus> {
  const [secret, left] = await Promise.all([findTotpSecret(ctx.db, userId), countRecoveryCodes(ctx.db, userId)])
  return { totp: secret !== undefined, recoveryCodesLeft: left }
}

/**
 * What adding a factor asks for at that moment, on the same form (docs/accounts.md "Two-factor
 * authentication"): the password, or a current code of the account's authenticator app. A recent
 * log-in alone is not enough: whoever holds an open session could otherwise add a factor of their
 * own that outlives the session.
 */
export interface EnrolmentProof {
  readonly password: string
  /** Used only when no password is given. */
  readonly appCode: string
}

export type EnrolmentRefusal = Exclude<Reauthentication, { kind: 'ok' }> | { readonly kind: 'wrong-code' }

/**
 * Checks an EnrolmentProof; undefined when it holds. Wrong passwords and codes count under the
 * Account pages' limit (RATE_LIMITS.reauthentication), like every re-authentication.
 */
export async function checkEnrolmentProof(
  ctx: AccountContext,
  userId: string,
  proof: EnrolmentProof,
): Promise<EnrolmentRefusal | undefined> {
  if (proof.password !== '' || proof.appCode.trim() === '') {
    if (passwordCannotBeRight(proof.password)) return { kind: 'wrong-password' }
    const check = await reauthenticate(ctx, userId, proof.password)
    return check.kind === 'ok' ? undefined : check
  }
  const slots = await takeSlots(ctx.db, ctx.clock, [rateRule(RATE_LIMITS.reauthentication, userId, ctx.limits)])
  if (!slots.allowed) return { kind: 'limited', retryAfterSeconds: slots.retryAfterSeconds }
  // An app code only: recovery codes are kept for a lost app (docs/decisions/011-second-factor.md).
  const code = proof.appCode.trim().replace(/\s/g, '')
  if (!isTotpCode(code) || (await useSecondFactorCode(ctx, userId, code)) !== 'totp') return { kind: 'wrong-code' }
  await releaseSlots(ctx.db, slots.taken)
  return undefined
}

/**
 * In the transaction that added a factor (`ctx.db`): device cookies collected before are void
 * (users.credential_version) and every other session of the account ends, with the refresh-token
 * families approved in it (endSessionsOfUser), so that a factor added after a takeover is not the
 * only door closed (docs/decisions/011-second-factor.md). `keepSessionKey`: the stored digest of
 * the browser's own session, which stays, and its families with it.
 */
export async function closeDoorsOnEnrolment(
  ctx: RevocationContext,
  userId: string,
  keepSessionKey: string | undefined,
  now: Date,
): Promise<number> {
  await bumpCredentialVersion(ctx.db, userId)
  return endSessionsOfUser(ctx, userId, now, keepSessionKey)
}

/**
 * A new secret to show, replacing any unconfirmed one; nothing changes for log-in until it is
 * confirmed. Refused until the account's address is verified: a factor set up before would be
 * whoever opened the account's, and the owner proving the address later removes it anyway.
 */
export async function startTotpEnrolment(ctx: AccountContext, userId: string): Promise<'started' | 'enrolled' | 'unverified'> {
  if ((await findUserById(ctx.db, userId))?.email_verified_at == null) return 'unverified'
  if (await findTotpSecret(ctx.db, userId)) return 'enrolled'
  const expiresAt = new Date(ctx.clock().getTime() + LIFETIMES.totpEnrolmentMs)
  await putTotpEnrolment(ctx.db, userId, ctx.sealedBox.seal(newTotpSecret()), expiresAt)
  return 'started'
}

export interface ShownEnrolment {
  /** The otpauth:// URI (Key Uri Format) the QR code holds. */
  readonly uri: string
  /** The secret in groups of four, for typing. */
  readonly secret: string
}

/** The unconfirmed secret, as the set-up page shows it; undefined when none is waiting. */
export async function shownEnrolment(ctx: AccountContext, userId: string): Promise<ShownEnrolment | undefined> {
  const secret = openSecret(ctx, await findTotpEnrolment(ctx.db, userId, ctx.clock()))
  const user = secret ? await findUserById(ctx.db, userId) : undefined
  if (!secret || !user) return undefined
  return { uri: totpUri(secret, ctx.serviceName, user.email), secret: groupedSecret(secret) }
}

export type ConfirmTotpResult =
  | { readonly kind: 'enabled'; readonly recoveryCodes: readonly string[] }
  | { readonly kind: 'wrong-code' }
  /** No unconfirmed secret (expired, or confirmed already). */
  | { readonly kind: 'expired' }
  /** The account's address is not verified yet. */
  | { readonly kind: 'unverified' }
  | Exclude<Reauthentication, { kind: 'ok' }>

/**
 * The enrolment confirmed with a current code of the new app and the password (EnrolmentProof):
 * the secret becomes the account's, with the code's step as the last accepted one (it cannot log
 * in again), and ten new recovery codes replace any before; device cookies and the other sessions
 * end (closeDoorsOnEnrolment). One transaction, so the account's second_factor flag never
 * disagrees with its tables.
 */
export async function confirmTotpEnrolment(
  ctx: AccountContext,
  userId: string,
  confirm: { code: string; password: string; keepSessionKey: string | undefined },
  audit: AuditTrail,
): Promise<ConfirmTotpResult> {
  const sealed = await findTotpEnrolment(ctx.db, userId, ctx.clock())
  const secret = openSecret(ctx, sealed)
  if (!sealed || !secret) return { kind: 'expired' }
  const refused = await checkEnrolmentProof(ctx, userId, { password: confirm.password, appCode: '' })
  if (refused) return refused
  const step = totpStep(secret, confirm.code.replace(/\s/g, ''), ctx.clock())
  if (step === undefined) return { kind: 'wrong-code' }
  const recoveryCodes = newRecoveryCodes()
  const enabled = await ctx.db.transaction().execute(async (trx) => {
    if ((await lockUserForChange(trx, userId))?.email_verified_at == null) return 'unverified' as const
    if (!(await deleteTotpEnrolment(trx, userId))) return false
    if (!(await insertTotpSecret(trx, userId, sealed, step, ctx.clock()))) return false
    await refreshSecondFactor(trx, userId)
    await replaceRecoveryCodes(
      trx,
      userId,
      recoveryCodes.map((c) => recoveryCodeHash(c) ?? ''),
      ctx.clock(),
    )
    await closeDoorsOnEnrolment({ db: trx, bus: ctx.bus }, userId, confirm.keepSessionKey, ctx.clock())
    return true
  })
  if (enabled === 'unverified') return { kind: 'unverified' }
  if (!enabled) return { kind: 'expired' }
  await audit.record({ event: 'user.totp_enabled', userId })
  await mailOwner(ctx, userId, totpEnabledMail)
  return { kind: 'enabled', recoveryCodes }
}

async function mailOwner(ctx: AccountContext, userId: string, mail: typeof totpEnabledMail): Promise<void> {
  const user = await findUserById(ctx.db, userId)
  if (user) await ctx.mailer.send(mail(ctx, user.email))
}

/** Which factor a code was; `recovery-code` used one up. */
export type FactorMethod = 'totp' | 'recovery-code'

/**
 * Checks and uses a code of the account: six digits are a TOTP code, accepted once per step
 * (advanceTotpStep), anything else a recovery code, deleted as it is used. Undefined when it is
 * neither; the caller counts that failure.
 */
export async function useSecondFactorCode(ctx: AccountContext, userId: string, typed: string): Promise<FactorMethod | undefined> {
  const code = typed.trim().replace(/\s/g, '')
  if (code.length > 64) return undefined
  if (isTotpCode(code)) {
    const secret = openSecret(ctx, (await findTotpSecret(ctx.db, userId))?.secret_sealed)
    const step = secret ? totpStep(secret, code, ctx.clock()) : undefined
    return step !== undefined && (await advanceTotpStep(ctx.db, userId, step)) ? 'totp' : undefined
  }
  const hash = recoveryCodeHash(code)
  return hash !== undefined && (await consumeRecoveryCode(ctx.db, userId, hash)) ? 'recovery-code' : undefined
}

export type ConfirmedChange<T> =
  | ({ readonly kind: 'done' } & T)
  | Exclude<Reauthentication, { kind: 'ok' }>
  | { readonly kind: 'wrong-code' }
  | { readonly kind: 'not-enabled' }

/**
 * The password and a current factor, asked before the second factor changes: whoever holds an
 * open session, or the password alone, cannot remove it. Wrong codes count under the same limit
 * as wrong passwords (RATE_LIMITS.reauthentication).
 */
async function confirmWithFactor(
  ctx: AccountContext,
  userId: string,
  proof: { password: string; code: string },
): Promise<Exclude<ConfirmedChange<object>, { kind: 'done' }> | undefined> {
  if (!(await findUserById(ctx.db, userId))?.second_factor) return { kind: 'not-enabled' }
  const check = await reauthenticate(ctx, userId, proof.password)
  if (check.kind !== 'ok') return check
  const slots = await takeSlots(ctx.db, ctx.clock, [rateRule(RATE_LIMITS.reauthentication, userId, ctx.limits)])
  if (!slots.allowed) return { kind: 'limited', retryAfterSeconds: slots.retryAfterSeconds }
  if (!(await useSecondFactorCode(ctx, userId, proof.code))) return { kind: 'wrong-code' }
  await releaseSlots(ctx.db, slots.taken)
  return undefined
}

/**
 * Turns the authenticator app off. Recovery codes go with it when no other second factor (a
 * passkey) remains: they would otherwise be a second factor of an account that has none.
 */
export async function turnOffTotp(
  ctx: AccountContext,
  userId: string,
  proof: { password: string; code: string },
  audit: AuditTrail,
): Promise<ConfirmedChange<object>> {
  if (!(await findTotpSecret(ctx.db, userId))) return { kind: 'not-enabled' }
  const refused = await confirmWithFactor(ctx, userId, proof)
  if (refused) return refused
  await ctx.db.transaction().execute(async (trx) => {
    await deleteTotpSecret(trx, userId)
    await refreshSecondFactor(trx, userId)
    const user = await findUserById(trx, userId)
    if (user && !user.second_factor) await replaceRecoveryCodes(trx, userId, [], ctx.clock())
  })
  await audit.record({ event: 'user.totp_disabled', userId })
  await mailOwner(ctx, userId, totpDisabledMail)
  return { kind: 'done' }
}

/**
 * Ten new recovery codes, shown once; the previous ones stop working. As for every factor added,
 * device cookies and the other sessions end (closeDoorsOnEnrolment).
 */
export async function regenerateRecoveryCodes(
  ctx: AccountContext,
  userId: string,
  proof: { password: string; code: string; keepSessionKey: string | undefined },
  audit: AuditTrail,
): Promise<ConfirmedChange<{ recoveryCodes: readonly string[] }>> {
  const refused = await confirmWithFactor(ctx, userId, proof)
  if (refused) return refused
  const recoveryCodes = newRecoveryCodes()
  const hashes = recoveryCodes.map((c) => recoveryCodeHash(c) ?? '')
  await ctx.db.transaction().execute(async (trx) => {
    await replaceRecoveryCodes(trx, userId, hashes, ctx.clock())
    await closeDoorsOnEnrolment({ db: trx, bus: ctx.bus }, userId, proof.keepSessionKey, ctx.clock())
  })
  await audit.record({ event: 'user.recovery_codes_regenerated', userId, detail: auditDetail.recoveryCodesLeft(recoveryCodes.length) })
  await mailOwner(ctx, userId, recoveryCodesRegeneratedMail)
  return { kind: 'done', recoveryCodes }
}
