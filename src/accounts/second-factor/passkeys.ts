import type { PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/server'
import { type AuditTrail, auditDetail } from '../../audit/audit-log.js'
import { QUOTAS } from '../../limits/policy.js'
import { countPasskeysOfUser, deletePasskey, insertPasskey, listPasskeysOfUser, renamePasskey } from '../../repositories/passkeys.js'
import { refreshSecondFactor } from '../../repositories/second-factor.js'
import { findUserById, lockUserForChange } from '../../repositories/users.js'
import type { AccountContext } from '../context.js'
import { passkeyAddedMail, passkeyRemovedMail } from '../mails.js'
import { type Reauthentication, reauthenticate } from '../sessions/reauthenticate.js'
import { type EnrolmentProof, type EnrolmentRefusal, checkEnrolmentProof, closeDoorsOnEnrolment } from './factors.js'
import {
  WEBAUTHN_TIMEOUT_MS,
  issueChallenge,
  knownTransports,
  parsePasskeyName,
  parseRegistrationResponse,
  relyingPartyOf,
  simpleWebAuthn,
  takeChallenge,
  userHandleOf,
} from './webauthn.js'

/*
 * An account's passkeys (docs/accounts.md "Passkeys", docs/decisions/011-second-factor.md): registering
 * one, naming and removing them. Every change refreshes users.second_factor in its transaction
 * (src/repositories/second-factor.ts), records an audit event, and an addition or removal mails
 * the account's address.
 */

export const MAX_PASSKEYS_PER_USER = QUOTAS.passkeysPerUser.max

export interface PasskeyView {
  readonly id: string
  readonly name: string
  readonly createdIso: string
  readonly lastUsedIso: string | null
  /** Synced to other devices by its provider (the BS flag, WebAuthn Level 3, 6.1). */
  readonly backedUp: boolean
}

export async function listPasskeys(ctx: AccountContext, userId: string): Promise<PasskeyView[]> {
  const rows = await listPasskeysOfUser(ctx.db, userId)
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    createdIso: r.created_at.toISOString(),
    lastUsedIso: r.last_used_at?.toISOString() ?? null,
    backedUp: r.backed_up,
  }))
}

export type RegistrationOptions =
  | { readonly kind: 'ok'; readonly options: PublicKeyCredentialCreationOptionsJSON; readonly challengeId: string }
  | { readonly kind: 'limit-reached' }
  /** The account's address is not verified yet: no factor before it is (docs/accounts.md "Passkeys"). */
  | { readonly kind: 'unverified' }

/**
 * The options of navigator.credentials.create for the account: a discoverable credential
 * (residentKey required, so "Sign in with a passkey" needs no email) with user verification
 * required (a PIN or biometric: the passkey alone is two factors), no attestation (Gatehouse
 * trusts no particular maker), and the account's passkeys excluded so one authenticator is not
 * registered twice.
 */
export async function passkeyRegistrationOptions(ctx: AccountContext, userId: string): Promise<RegistrationOptions> {
  const [user, existing] = await Promise.all([findUserById(ctx.db, userId), listPasskeysOfUser(ctx.db, userId)])
  if (user === undefined || existing.length >= MAX_PASSKEYS_PER_USER) return { kind: 'limit-reached' }
  if (user.email_verified_at === null) return { kind: 'unverified' }
  const rp = relyingPartyOf(ctx)
  const { generateRegistrationOptions } = await simpleWebAuthn()
  const options = await generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: user.email,
    userDisplayName: user.email,
    userID: userHandleOf(user.id),
    timeout: WEBAUTHN_TIMEOUT_MS,
    attestationType: 'none',
    excludeCredentials: existing.map((p) => ({ id: p.id, transports: p.transports })),
    authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'required' },
  })
  const challengeId = await issueChallenge(ctx.db, ctx.clock(), { purpose: 'register', userId, value: options.challenge })
  return { kind: 'ok', options, challengeId }
}

export type PasskeyRegistration =
  | { readonly kind: 'added'; readonly name: string; readonly mailSent: boolean }
  /** The challenge is unknown, used, expired, or another account's: start again. */
  | { readonly kind: 'expired' }
  /** The response did not verify (wrong origin or RP ID, no user verification, bad signature, malformed). */
  | { readonly kind: 'invalid' }
  | { readonly kind: 'duplicate' }
  | { readonly kind: 'limit-reached' }
  | { readonly kind: 'unverified' }
  | EnrolmentRefusal

/**
 * Verifies what navigator.credentials.create returned and stores the passkey under `name` (or a
 * default), asked with the password or a current authenticator-app code typed on the same form
 * (`proof`). Device cookies and the account's other sessions end with it (closeDoorsOnEnrolment).
 */
export async function registerPasskey(
  ctx: AccountContext,
  userId: string,
  attempt: { response: unknown; challengeId: unknown; name: unknown; proof: EnrolmentProof; keepSessionKey: string | undefined },
  audit: AuditTrail,
): Promise<PasskeyRegistration> {
  const now = ctx.clock()
  const expectedChallenge = await takeChallenge(ctx.db, now, attempt.challengeId, { purpose: 'register', userId })
  if (expectedChallenge === undefined) return { kind: 'expired' }
  const refused = await checkEnrolmentProof(ctx, userId, attempt.proof)
  if (refused) return refused
  const response = parseRegistrationResponse(attempt.response)
  if (response === undefined) return { kind: 'invalid' }
  const rp = relyingPartyOf(ctx)
  const { verifyRegistrationResponse } = await simpleWebAuthn()
  const verified = await verifyRegistrationResponse({
    response,
    expectedChallenge,
    expectedOrigin: rp.origin,
    expectedRPID: rp.id,
    requireUserVerification: true,
  }).catch(() => undefined)
  if (!verified?.verified) return { kind: 'invalid' }
  const info = verified.registrationInfo
  const name = parsePasskeyName(attempt.name) ?? `Passkey added ${now.toISOString().slice(0, 10)}`
  const outcome = await ctx.db.transaction().execute(async (trx) => {
    const user = await lockUserForChange(trx, userId)
    if (user === undefined || (await countPasskeysOfUser(trx, userId)) >= MAX_PASSKEYS_PER_USER) return 'limit-reached' as const
    if (user.email_verified_at === null) return 'unverified' as const
    const inserted = await insertPasskey(trx, {
      id: info.credential.id,
      user_id: userId,
      public_key: info.credential.publicKey,
      counter: info.credential.counter,
      transports: knownTransports(info.credential.transports),
      name,
      backed_up: info.credentialBackedUp,
      created_at: now,
      last_used_at: null,
    })
    if (!inserted) return 'duplicate' as const
    await refreshSecondFactor(trx, userId)
    await closeDoorsOnEnrolment({ db: trx, bus: ctx.bus }, userId, attempt.keepSessionKey, now)
    return user.email
  })
  if (outcome === 'limit-reached' || outcome === 'duplicate' || outcome === 'unverified') return { kind: outcome }
  await audit.record({ event: 'user.passkey_added', userId, detail: auditDetail.passkey(name) })
  return { kind: 'added', name, mailSent: await ctx.mailer.send(passkeyAddedMail(ctx, outcome, name)) }
}

export type PasskeyRename = 'renamed' | 'not-found' | 'invalid-name'

export async function renameOwnPasskey(
  ctx: AccountContext,
  userId: string,
  change: { id: unknown; name: unknown },
  audit: AuditTrail,
): Promise<PasskeyRename> {
  const name = parsePasskeyName(change.name)
  if (name === undefined) return 'invalid-name'
  if (typeof change.id !== 'string' || change.id.length > 1400) return 'not-found'
  const previous = (await listPasskeysOfUser(ctx.db, userId)).find((p) => p.id === change.id)
  if (previous === undefined || !(await renamePasskey(ctx.db, userId, change.id, name))) return 'not-found'
  await audit.record({ event: 'user.passkey_renamed', userId, detail: auditDetail.passkeyRenamed(previous.name, name) })
  return 'renamed'
}

export type PasskeyRemoval =
  | { readonly kind: 'removed'; readonly name: string; readonly mailSent: boolean }
  | { readonly kind: 'not-found' }
  /** It is the account's last second factor, and the session did not log in with one recently. */
  | { readonly kind: 'needs-factor' }
  | Exclude<Reauthentication, { kind: 'ok' }>

/** Rolls back the removal of an account's last second factor (removePasskey). */
class LastFactorKept extends Error {}

/** What the browser's session says of its log-in: its RFC 8176 methods and when it happened. */
export interface SessionLogIn {
  readonly amr: readonly string[]
  readonly authenticatedAt: Date
}

/**
 * Removes a passkey, asked with the current password (counted like every re-authentication), so
 * that a session left open cannot take away the owner's passkeys. When it is the account's last
 * second factor (no other passkey, no authenticator app), removing it turns the second factor off,
 * which needs the password and a current factor (docs/accounts.md "Passkeys"): the session must have
 * logged in with a second factor within REAUTH_WINDOW_MINUTES. The check is made in the
 * transaction that deletes, so two removals at once cannot both pass it.
 */
export async function removePasskey(
  ctx: AccountContext,
  userId: string,
  removal: { id: unknown; password: string; session: SessionLogIn },
  audit: AuditTrail,
): Promise<PasskeyRemoval> {
  if (typeof removal.id !== 'string' || removal.id.length > 1400) return { kind: 'not-found' }
  const id = removal.id
  const check = await reauthenticate(ctx, userId, removal.password)
  if (check.kind !== 'ok') return check
  const factorFresh =
    removal.session.amr.includes('mfa') && ctx.clock().getTime() - removal.session.authenticatedAt.getTime() <= ctx.reauthWindowMs
  let name: string | undefined
  try {
    name = await ctx.db.transaction().execute(async (trx) => {
      const removed = await deletePasskey(trx, userId, id)
      // refreshSecondFactor answers true when the flag changed: it was the last factor.
      if (removed !== undefined && (await refreshSecondFactor(trx, userId)) && !factorFresh) throw new LastFactorKept()
      return removed
    })
  } catch (error) {
    if (error instanceof LastFactorKept) return { kind: 'needs-factor' }
    throw error
  }
  if (name === undefined) return { kind: 'not-found' }
  await audit.record({ event: 'user.passkey_removed', userId, detail: auditDetail.passkey(name) })
  return { kind: 'removed', name, mailSent: await ctx.mailer.send(passkeyRemovedMail(ctx, check.email, name)) }
}
