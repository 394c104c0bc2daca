import { type Actor, trailOf } from '../../audit/actor.js'
import type { AuditLog } from '../../audit/audit-log.js'
import { clientAddressKey } from '../../limits/client-address.js'
import { type Account, passwordCannotBeRight } from '../account.js'
import { takeChallengeSlot } from './webauthn.js'
import type { AccountContext } from '../context.js'
import { logInWithPasskey, passkeyLoginOptions, passkeyOptionsForUser, verifyPasskeyForUser } from './passkey-login.js'
import {
  type SessionLogIn,
  listPasskeys,
  passkeyRegistrationOptions,
  registerPasskey,
  removePasskey,
  renameOwnPasskey,
} from './passkeys.js'
import {
  type ProvenFactor,
  type SecondFactorAttempt,
  finishSecondFactor,
  pendingLogInFactors,
  pendingLogInOf,
  submitSecondFactorCode,
} from './pending-login.js'
import {
  type EnrolmentProof,
  confirmTotpEnrolment,
  regenerateRecoveryCodes,
  shownEnrolment,
  startTotpEnrolment,
  turnOffTotp,
  secondFactorStatus,
} from './factors.js'
import { markSecondFactorUsed } from '../sessions/sessions.js'

/*
 * The second factor's use cases (docs/accounts.md "Two-factor authentication", "Passkeys"): the log-in's
 * second step, the authenticator app and recovery codes, and passkeys. Part of the account's use
 * cases (src/accounts/use-cases.ts), each recording its audit event through the actor's trail.
 */

export function secondFactorUseCases(ctx: AccountContext, audit: AuditLog) {
  return { ...secondStepUseCases(ctx, audit), ...appAndCodeUseCases(ctx, audit), ...passkeyUseCases(ctx, audit) }
}

/**
 * The log-in's second step (src/accounts/second-factor/pending-login.ts). A factor other than a code (a passkey
 * assertion) plugs in by checking itself against `pendingLogIn(id).userId` and then calling
 * `finishSecondFactor` with its methods; the edge starts the session with the `amr` returned.
 */
function secondStepUseCases(ctx: AccountContext, audit: AuditLog) {
  return {
    /** The account the browser's pending log-in is for, or undefined (expired, ended, none). */
    pendingLogIn: (pendingId: string | undefined): Promise<{ userId: string } | undefined> => pendingLogInOf(ctx, pendingId),
    /** The factors the pending log-in's account has, which the second step offers; undefined when it names none. */
    pendingLogInFactors: (pendingId: string | undefined) => pendingLogInFactors(ctx, pendingId),
    /** A TOTP or recovery code, or a passkey assertion, at the second step; failures counted like wrong passwords. */
    submitSecondFactor: (actor: Actor, pendingId: string | undefined, attempt: SecondFactorAttempt) =>
      submitSecondFactorCode(ctx, pendingId, attempt, trailOf(audit, actor)),
    /** Ends the pending log-in once its caller has proven a second factor for its account. */
    finishSecondFactor: (actor: Actor, pendingId: string | undefined, factor: ProvenFactor) =>
      finishSecondFactor(ctx, pendingId, factor, trailOf(audit, actor)),
  }
}

/** The Two-factor authentication page (docs/accounts.md "Two-factor authentication"): the authenticator app and recovery codes. */
function appAndCodeUseCases(ctx: AccountContext, audit: AuditLog) {
  return {
    secondFactorStatus: (account: Pick<Account, 'userId'>) => secondFactorStatus(ctx, account.userId),
    startTotpEnrolment: (account: Account) => startTotpEnrolment(ctx, account.userId),
    /** The secret waiting for its confirming code, as the set-up page shows it. */
    shownTotpEnrolment: (account: Account) => shownEnrolment(ctx, account.userId),
    /**
     * Needs the code of the new app and the password; `keepSessionKey`: the browser's session, which
     * stays (the others end) and counts as having used the factor (markSecondFactorUsed).
     */
    async confirmTotpEnrolment(account: Account, confirm: { code: string; password: string; keepSessionKey: string | undefined }) {
      const result = await confirmTotpEnrolment(ctx, account.userId, confirm, trailOf(audit, account))
      if (result.kind === 'enabled') await markSecondFactorUsed(ctx.db, confirm.keepSessionKey, 'totp')
      return result
    },
    /** Needs the password and a current code or recovery code. */
    turnOffTotp: (account: Account, proof: { password: string; code: string }) =>
      passwordCannotBeRight(proof.password)
        ? Promise.resolve({ kind: 'wrong-password' as const })
        : turnOffTotp(ctx, account.userId, proof, trailOf(audit, account)),
    /** Needs the password and a current code or recovery code; the new codes are shown once, and the other sessions end. */
    regenerateRecoveryCodes: (account: Account, proof: { password: string; code: string; keepSessionKey: string | undefined }) =>
      passwordCannotBeRight(proof.password)
        ? Promise.resolve({ kind: 'wrong-password' as const })
        : regenerateRecoveryCodes(ctx, account.userId, proof, trailOf(audit, account)),
  }
}

/**
 * Passkeys (docs/accounts.md "Passkeys"): the account's own (src/accounts/second-factor/passkeys.ts), signing in with one
 * (src/accounts/second-factor/passkey-login.ts), and the two calls of the second-factor step of a password log-in.
 */
function passkeyUseCases(ctx: AccountContext, audit: AuditLog) {
  return {
    listPasskeys: (account: Pick<Account, 'userId'>) => listPasskeys(ctx, account.userId),
    /** Within the challenge limits of the account and the client address (RATE_LIMITS.webauthnChallenge*). */
    async passkeyRegistrationOptions(account: Pick<Account, 'userId'>, ip: string) {
      const refused = await takeChallengeSlot(ctx, { userId: account.userId, address: clientAddressKey(ip) })
      return refused ?? passkeyRegistrationOptions(ctx, account.userId)
    },
    /**
     * `attempt.challengeId`: what passkeyRegistrationOptions returned, kept by the browser in a cookie;
     * `proof`: the password or an app code typed on the form; `keepSessionKey`: the browser's session,
     * which stays (the others end) and counts as having used the passkey (markSecondFactorUsed).
     */
    async registerPasskey(
      account: Account,
      attempt: { response: unknown; challengeId: unknown; name: unknown; proof: EnrolmentProof; keepSessionKey: string | undefined },
    ) {
      const result = await registerPasskey(ctx, account.userId, attempt, trailOf(audit, account))
      if (result.kind === 'added') await markSecondFactorUsed(ctx.db, attempt.keepSessionKey, 'passkey')
      return result
    },
    renamePasskey: (account: Account, change: { id: unknown; name: unknown }) =>
      renameOwnPasskey(ctx, account.userId, change, trailOf(audit, account)),
    async removePasskey(account: Account, removal: { id: unknown; password: string; session: SessionLogIn }) {
      if (passwordCannotBeRight(removal.password)) return { kind: 'wrong-password' as const }
      return removePasskey(ctx, account.userId, removal, trailOf(audit, account))
    },
    /** "Sign in with a passkey": options with a challenge bound to no account, within LOGIN_ADDRESS_ATTEMPT_LIMIT. */
    passkeyLoginOptions: (ip: string) => passkeyLoginOptions(ctx, clientAddressKey(ip)),
    /** "Sign in with a passkey": verifies the assertion, throttled per address and recorded like a log-in. */
    logInWithPasskey: (
      actor: Actor,
      attempt: { response: unknown; challengeId: unknown; address: string; deviceCookie: string | undefined },
    ) => logInWithPasskey(ctx, attempt, trailOf(audit, actor)),
    /**
     * The second-factor step of a password log-in: options limited to the account's passkeys
     * ({ kind: 'none' } when it has none; refused past the challenge limits), then
     * verifyPasskeyForUser with the returned challengeId, which answers { kind: 'ok' } or
     * { kind: 'failed', reason } and counts nothing (the step counts).
     */
    passkeyOptionsForUser: (userId: string, ip: string) => passkeyOptionsForUser(ctx, { userId, address: clientAddressKey(ip) }),
    verifyPasskeyForUser: (actor: Actor, userId: string, attempt: { response: unknown; challengeId: unknown }) =>
      verifyPasskeyForUser(ctx, userId, attempt, trailOf(audit, actor)),
  }
}
