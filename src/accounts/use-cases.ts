import { type Actor, trailOf } from '../audit/actor.js'
import type { AuditLog } from '../audit/audit-log.js'
import { readSecurityLog } from '../audit/audit-pages.js'
import type { ParsedCredentials } from './login/credentials.js'
import { emailField, newPasswordField, parseField } from './login/credentials.js'
import { clientAddressKey } from '../limits/client-address.js'
import { RATE_LIMITS, rateRule } from '../limits/policy.js'
import { takeSlots } from '../limits/rate-limiter.js'
import {
  type ChangePasswordResult,
  type CloseAccountResult,
  type EmailChangeRequest,
  cancelEmailChange,
  changePassword,
  closeAccount,
  confirmEmailChange,
  emailChangeCancelLink,
  emailChangeLink,
  requestEmailChange,
} from './settings/account-settings.js'
import type { AccountContext } from './context.js'
import { requestPasswordReset, resetLinkEmail, resetPassword } from './recovery/password-reset.js'
import { type SessionView, endOtherSessions, listSessions } from './sessions/sessions.js'
import type { SessionCache } from './sessions/session-cache.js'
import { type SessionSettings, sessionUseCases } from './sessions/session-use-cases.js'
import { secondFactorUseCases } from './second-factor/use-cases.js'
import { type Account, passwordCannotBeRight } from './account.js'

export type { Account }
import { type ReauthProof, type SessionConfirmation, confirmSession } from './sessions/confirm-session.js'
import { signUp } from './sign-up/signup.js'
import { changeDisplayName, displayNameOf } from './settings/profile.js'
import { type BrowserSessionRef, confirmVerification, resendVerification, verificationLinkState } from './sign-up/verification.js'

/*
 * The account's use cases (docs/accounts.md "Your account"), built once in src/services.ts: sign-up within
 * SIGNUP_LIMIT, the mailed links, and the Account pages, each recording its audit event through
 * the actor's trail.
 */

export type SignUpResult =
  | { kind: 'signed-up'; mailSent: boolean }
  | { kind: 'limited'; retryAfterSeconds: number }
  | { kind: 'invalid'; errors: Extract<ParsedCredentials, { ok: false }>['errors'] }

/** Which fields of an Account form were refused before anything was asked of the database. */
export interface FieldRefusals {
  currentPassword?: true
  newPassword?: string
  newEmail?: string
}

type Refused = { kind: 'invalid'; errors: FieldRefusals }

function refusals(currentPassword: string, other: { newPassword?: string; newEmail?: string }): Refused | undefined {
  const errors: FieldRefusals = { ...other }
  if (passwordCannotBeRight(currentPassword)) errors.currentPassword = true
  return Object.keys(errors).length > 0 ? { kind: 'invalid', errors } : undefined
}

/** The mailed links (src/accounts/sign-up/email-links.ts): each is peeked at on the GET and used on the POST. */
function emailLinkUseCases(ctx: AccountContext, audit: AuditLog) {
  return {
    resendVerification: (account: Account) => resendVerification(ctx, account.userId),
    /** `loggedInUserId`: the browser's account; the page asks for a new password unless it is the link's. */
    verificationLinkState: (token: unknown, loggedInUserId: string | undefined) => verificationLinkState(ctx, token, loggedInUserId),
    /**
     * `session`: the browser's own, which a first proof of the address keeps (src/accounts/recovery/recovery.ts);
     * `newPassword`: typed on the link's page, needed for a first proof without the account's session.
     */
    confirmVerification: (
      actor: Actor,
      token: unknown,
      proof: { session: BrowserSessionRef | undefined; newPassword: string | undefined },
    ) => confirmVerification(ctx, token, proof, trailOf(audit, actor)),
    requestPasswordReset: (email: string, ip: string) => requestPasswordReset(ctx, email, clientAddressKey(ip)),
    resetLinkEmail: (token: unknown) => resetLinkEmail(ctx, token),
    resetPassword: (actor: Actor, token: unknown, reset: { newPassword: string; revokeAccess: boolean }) =>
      resetPassword(ctx, token, reset, trailOf(audit, actor)),
    emailChangeLink: (token: unknown) => emailChangeLink(ctx, token),
    confirmEmailChange: (actor: Actor, token: unknown) => confirmEmailChange(ctx, token, actor.userId ?? undefined, trailOf(audit, actor)),
    emailChangeCancelLink: (token: unknown) => emailChangeCancelLink(ctx, token),
    cancelEmailChange: (actor: Actor, token: unknown) => cancelEmailChange(ctx, token, trailOf(audit, actor)),
  }
}

export type { SessionSettings }

export function accountUseCases(ctx: AccountContext, audit: AuditLog, sessions: SessionSettings, cache: SessionCache) {
  return {
    ...sessionUseCases(ctx, audit, sessions, cache),
    /**
     * Attempts per address only (docs/operating/limits.md): a key per email would let anyone
     * stop a stranger from signing up by trying their address first. Created or already
     * registered answer alike, so sign-up does not tell which emails have accounts.
     */
    async signUp(actor: Actor, ip: string, form: ParsedCredentials): Promise<SignUpResult> {
      const decision = await takeSlots(ctx.db, ctx.clock, [rateRule(RATE_LIMITS.signup, clientAddressKey(ip), ctx.limits)])
      if (!decision.allowed) return { kind: 'limited', retryAfterSeconds: decision.retryAfterSeconds }
      if (!form.ok) return { kind: 'invalid', errors: form.errors }
      return { kind: 'signed-up', ...(await signUp(ctx, form.email, form.password, trailOf(audit, actor))) }
    },
    ...emailLinkUseCases(ctx, audit),
    ...settingsUseCases(ctx, audit),
    ...confirmationUseCases(ctx, audit),
    ...secondFactorUseCases(ctx, audit),
    /** The display name on the Account page (OpenID Connect `name`). */
    displayName: (account: Account) => displayNameOf(ctx, account.userId),
    changeDisplayName: (account: Account, value: string) => changeDisplayName(ctx, account.userId, value, trailOf(audit, account)),
  }
}

/** "Confirm it's you" ("sudo mode", src/accounts/sessions/confirm-session.ts, docs/accounts.md "Re-authentication"). */
function confirmationUseCases(ctx: AccountContext, audit: AuditLog) {
  return {
    /** The proof opens the sensitive actions to the browser's session `sessionId` for REAUTH_WINDOW_MINUTES. */
    async reauthenticate(account: Account, sessionId: string | undefined, proof: ReauthProof): Promise<SessionConfirmation> {
      if (sessionId === undefined) return { kind: 'wrong-password' }
      if (proof.kind === 'password' && passwordCannotBeRight(proof.password)) return { kind: 'wrong-password' }
      return confirmSession(ctx, { userId: account.userId, address: account.address, sessionId, proof }, trailOf(audit, account))
    },
  }
}

/** The Account pages (docs/accounts.md "Account settings"): password, email, sessions, closing the account. */
function settingsUseCases(ctx: AccountContext, audit: AuditLog) {
  return {
    /** A new password, asked with the current one; the other sessions end (src/accounts/settings/account-settings.ts). */
    async changePassword(
      account: Account,
      change: { sessionId: string | undefined; currentPassword: string; newPassword: string },
    ): Promise<ChangePasswordResult | Refused> {
      const next = parseField(newPasswordField, change.newPassword)
      const refused = refusals(change.currentPassword, next.ok ? {} : { newPassword: next.error })
      if (refused || !next.ok) return refused ?? { kind: 'invalid', errors: {} }
      const request = {
        userId: account.userId,
        sessionId: change.sessionId,
        currentPassword: change.currentPassword,
        newPassword: next.value,
      }
      return changePassword(ctx, request, trailOf(audit, account))
    },

    /** The first half of an email change; `newEmail` of a sent request is the address as checked. */
    async requestEmailChange(
      account: Account,
      change: { currentPassword: string; newEmail: string },
    ): Promise<Exclude<EmailChangeRequest, { kind: 'sent' }> | { kind: 'sent'; mailSent: boolean; newEmail: string } | Refused> {
      const email = parseField(emailField, change.newEmail)
      const refused = refusals(change.currentPassword, email.ok ? {} : { newEmail: email.error })
      if (refused || !email.ok) return refused ?? { kind: 'invalid', errors: {} }
      const result = await requestEmailChange(ctx, {
        userId: account.userId,
        currentPassword: change.currentPassword,
        newEmail: email.value,
      })
      return result.kind === 'sent' ? { ...result, newEmail: email.value } : result
    },

    async closeAccount(account: Account, password: string): Promise<CloseAccountResult> {
      if (passwordCannotBeRight(password)) return { kind: 'wrong-password' }
      return closeAccount(ctx, account.userId, password, trailOf(audit, account))
    },

    /** The account's own security events (docs/operating/admin.md "Audit log"), newest first, one page from `cursor` on. */
    securityLog: (account: Pick<Account, 'userId'>, cursor: unknown) => readSecurityLog(ctx.db, account.userId, cursor),
    listSessions: (account: Account, sessionId: string | undefined): Promise<SessionView[]> =>
      listSessions(ctx.db, account.userId, sessionId, ctx.clock()),

    /** "Log out other sessions", recorded on the account's Security log. */
    async endOtherSessions(account: Account, sessionId: string | undefined): Promise<number> {
      const ended = await endOtherSessions(ctx, account.userId, sessionId, ctx.clock())
      await trailOf(audit, account).record({ event: 'user.sessions_ended', userId: account.userId, detail: `${ended} sessions ended` })
      return ended
    },
  }
}

export type AccountUseCases = ReturnType<typeof accountUseCases>
