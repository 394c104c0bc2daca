import type { PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server'
import { type AuditTrail, auditDetail } from '../../audit/audit-log.js'
import type { User } from '../../db/schema.js'
import { RATE_LIMITS, rateRule } from '../../limits/policy.js'
import { releaseSlots, takeSlots } from '../../limits/rate-limiter.js'
import { type PasskeyRow, findPasskeyById, listPasskeysOfUser, recordPasskeyUse } from '../../repositories/passkeys.js'
import { findUserById } from '../../repositories/users.js'
import type { AccountContext } from '../context.js'
import { issueDeviceCookie, verifyDeviceCookie } from '../login/device-cookies.js'
import { secondFactorProven } from './guessing.js'
import {
  type ChallengesRefused,
  WEBAUTHN_TIMEOUT_MS,
  issueChallenge,
  parseAuthenticationResponse,
  relyingPartyOf,
  simpleWebAuthn,
  takeChallenge,
  takeChallengeSlot,
  userHandleBase64Url,
} from './webauthn.js'

/*
 * Signing in with a passkey (docs/accounts.md "Passkeys", docs/decisions/011-second-factor.md): without a
 * password ("Sign in with a passkey"), and as the second factor of a password log-in, where the
 * assertion must come from one of that account's passkeys.
 */

/** Why an assertion was not accepted; the edge words each for the person. */
export type AssertionFailure = 'expired' | 'unknown-credential' | 'invalid' | 'counter'

type Assertion = { readonly kind: 'ok'; readonly passkey: PasskeyRow } | { readonly kind: AssertionFailure; readonly passkey?: PasskeyRow }

/**
 * Verifies an assertion against the stored public key: the challenge, PUBLIC_URL's origin and RP
 * ID, user verification, and the signature counter. The counter rule (WebAuthn Level 3, 7.2
 * step 22): a counter that ever was non-zero must grow at every use, or the authenticator may have
 * been copied; a stored 0 takes a received 0 (synced passkeys never count). The library's own
 * check is given 0 so that a refused counter is told apart from a bad signature, and the rule is
 * one conditional UPDATE (recordPasskeyUse): compared and written in one statement, it never
 * lowers the stored counter and lets only one of two concurrent assertions with one counter pass.
 */
async function verifyAssertion(
  ctx: AccountContext,
  response: unknown,
  expectedChallenge: string,
  onlyUser: string | undefined,
  audit: AuditTrail,
): Promise<Assertion> {
  const parsed = parseAuthenticationResponse(response)
  if (parsed === undefined) return { kind: 'invalid' }
  const passkey = await findPasskeyById(ctx.db, parsed.id)
  if (passkey === undefined || (onlyUser !== undefined && passkey.user_id !== onlyUser)) return { kind: 'unknown-credential' }
  const handle = parsed.response.userHandle
  if (handle !== undefined && handle !== userHandleBase64Url(passkey.user_id)) return { kind: 'invalid', passkey }
  const rp = relyingPartyOf(ctx)
  const { verifyAuthenticationResponse } = await simpleWebAuthn()
  const verified = await verifyAuthenticationResponse({
    response: parsed,
    expectedChallenge,
    expectedOrigin: rp.origin,
    expectedRPID: rp.id,
    credential: { id: passkey.id, publicKey: new Uint8Array(passkey.public_key), counter: 0, transports: [] },
    requireUserVerification: true,
  }).catch(() => undefined)
  if (!verified?.verified) return { kind: 'invalid', passkey }
  const received = verified.authenticationInfo.newCounter
  const use = { id: passkey.id, counter: received, backedUp: verified.authenticationInfo.credentialBackedUp, at: ctx.clock() }
  if (!(await recordPasskeyUse(ctx.db, use))) {
    const detail = auditDetail.passkeyCounter(passkey.name, passkey.counter, received)
    await audit.record({ event: 'user.passkey_counter_refused', userId: passkey.user_id, detail })
    return { kind: 'counter', passkey }
  }
  return { kind: 'ok', passkey }
}

export interface AuthenticationOptions {
  readonly options: PublicKeyCredentialRequestOptionsJSON
  /** Hand it back to verify: the passwordless edge keeps it in a cookie, the second-factor step in its pending log-in. */
  readonly challengeId: string
}

/**
 * Options of navigator.credentials.get for signing in without a password: no allowCredentials,
 * so the authenticator offers its discoverable credentials for this RP ID, and the account is
 * known only from the credential it answers with. The challenge belongs to no account. Each
 * request is a sign-in attempt under LOGIN_ADDRESS_ATTEMPT_LIMIT (RATE_LIMITS.loginAddressAttempts,
 * kept whatever follows), which also bounds the challenges one address can have stored.
 */
export async function passkeyLoginOptions(
  ctx: AccountContext,
  address: string,
): Promise<({ readonly kind: 'ok' } & AuthenticationOptions) | { readonly kind: 'refused'; readonly retryAfterSeconds: number }> {
  const slots = await takeSlots(ctx.db, ctx.clock, [rateRule(RATE_LIMITS.loginAddressAttempts, address, ctx.limits)])
  if (!slots.allowed) return { kind: 'refused', retryAfterSeconds: slots.retryAfterSeconds }
  const { generateAuthenticationOptions } = await simpleWebAuthn()
  const options = await generateAuthenticationOptions({
    rpID: relyingPartyOf(ctx).id,
    timeout: WEBAUTHN_TIMEOUT_MS,
    userVerification: 'required',
  })
  const challengeId = await issueChallenge(ctx.db, ctx.clock(), { purpose: 'authenticate', userId: null, value: options.challenge })
  return { kind: 'ok', options, challengeId }
}

export type PasskeyLogInResult =
  | { readonly kind: 'ok'; readonly userId: string; readonly deviceCookie: string }
  | { readonly kind: 'refused'; readonly retryAfterSeconds: number }
  | { readonly kind: 'failed'; readonly reason: AssertionFailure; readonly filled: boolean }
  | { readonly kind: 'suspended' }

/**
 * "Sign in with a passkey". Failures count like password log-in failures per client address
 * (LOGIN_ADDRESS_FAILURE_LIMIT): a slot is taken before verifying and given back on success (the
 * attempt itself was counted when its options were issued, passkeyLoginOptions). There
 * is no account key to count under before the assertion names one, and a passkey cannot be
 * guessed, so the per-account limits of the password form do not apply. A suspended account is
 * refused after a valid assertion, as the password form refuses it after the right password.
 */
export async function logInWithPasskey(
  ctx: AccountContext,
  attempt: { response: unknown; challengeId: unknown; address: string; deviceCookie: string | undefined },
  audit: AuditTrail,
): Promise<PasskeyLogInResult> {
  const rule = rateRule(RATE_LIMITS.loginAddress, attempt.address, ctx.limits)
  const slots = await takeSlots(ctx.db, ctx.clock, [rule])
  if (!slots.allowed) return { kind: 'refused', retryAfterSeconds: slots.retryAfterSeconds }
  const filled = slots.filled.length > 0
  const expectedChallenge = await takeChallenge(ctx.db, ctx.clock(), attempt.challengeId, { purpose: 'authenticate', userId: null })
  if (expectedChallenge === undefined) return { kind: 'failed', reason: 'expired', filled }
  const assertion = await verifyAssertion(ctx, attempt.response, expectedChallenge, undefined, audit)
  const user: User | undefined = assertion.kind === 'ok' ? await findUserById(ctx.db, assertion.passkey.user_id) : undefined
  if (assertion.kind !== 'ok' || user === undefined) {
    const userId = assertion.passkey?.user_id ?? null
    await audit.record({ event: 'user.login_failed', userId, detail: auditDetail.passkeyLoginFailed() })
    return { kind: 'failed', reason: assertion.kind === 'ok' ? 'unknown-credential' : assertion.kind, filled }
  }
  await releaseSlots(ctx.db, slots.taken)
  if (user.suspended_at !== null) return { kind: 'suspended' }
  await secondFactorProven(ctx, user.id)
  const knownDevice = (await verifyDeviceCookie(ctx.db, ctx.clock, attempt.deviceCookie, user)) !== undefined
  await audit.record({ event: 'user.logged_in', userId: user.id, actorId: user.id, detail: auditDetail.passkeyLogIn(knownDevice) })
  return { kind: 'ok', userId: user.id, deviceCookie: await issueDeviceCookie(ctx.db, ctx.clock, user) }
}

/**
 * For the second-factor step of a password log-in: options of navigator.credentials.get limited
 * to the account's own passkeys (allowCredentials), with a challenge bound to the account, within
 * the challenge limits of the account and the client address (takeChallengeSlot). `none` when
 * the account has no passkey.
 */
export async function passkeyOptionsForUser(
  ctx: AccountContext,
  who: { readonly userId: string; readonly address: string },
): Promise<({ readonly kind: 'ok' } & AuthenticationOptions) | { readonly kind: 'none' } | ChallengesRefused> {
  const { userId } = who
  const passkeys = await listPasskeysOfUser(ctx.db, userId)
  if (passkeys.length === 0) return { kind: 'none' }
  const refused = await takeChallengeSlot(ctx, who)
  if (refused) return refused
  const { generateAuthenticationOptions } = await simpleWebAuthn()
  const options = await generateAuthenticationOptions({
    rpID: relyingPartyOf(ctx).id,
    timeout: WEBAUTHN_TIMEOUT_MS,
    userVerification: 'required',
    allowCredentials: passkeys.map((p) => ({ id: p.id, transports: p.transports })),
  })
  const challengeId = await issueChallenge(ctx.db, ctx.clock(), { purpose: 'authenticate', userId, value: options.challenge })
  return { kind: 'ok', options, challengeId }
}

export type PasskeyCheck =
  { readonly kind: 'ok'; readonly passkeyName: string } | { readonly kind: 'failed'; readonly reason: AssertionFailure }

/**
 * For the second-factor step: whether `response` is an assertion, for the challenge issued by
 * passkeyOptionsForUser under `challengeId` for this account, by one of this account's passkeys.
 * The challenge is used up either way. It counts nothing and records nothing but a counter
 * refusal: the caller counts failures against its pending log-in and records the log-in.
 */
export async function verifyPasskeyForUser(
  ctx: AccountContext,
  userId: string,
  attempt: { response: unknown; challengeId: unknown },
  audit: AuditTrail,
): Promise<PasskeyCheck> {
  const expectedChallenge = await takeChallenge(ctx.db, ctx.clock(), attempt.challengeId, { purpose: 'authenticate', userId })
  if (expectedChallenge === undefined) return { kind: 'failed', reason: 'expired' }
  const assertion = await verifyAssertion(ctx, attempt.response, expectedChallenge, userId, audit)
  return assertion.kind === 'ok' ? { kind: 'ok', passkeyName: assertion.passkey.name } : { kind: 'failed', reason: assertion.kind }
}
