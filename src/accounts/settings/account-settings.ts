import type { AuditTrail } from '../../audit/audit-log.js'
import { sha256Hex } from '../../lib/crypto.js'
import { hashPassword } from '../../lib/passwords.js'
import { RATE_LIMITS, rateRule } from '../../limits/policy.js'
import { takeSlots } from '../../limits/rate-limiter.js'
import { voidEmailTokens } from '../../repositories/email-tokens.js'
import { changeEmail, findUserByEmail, findUserById, lockUser, setPasswordHash } from '../../repositories/users.js'
import type { AccountContext } from '../context.js'
import { deleteUserAccount } from './delete-account.js'
import { issueEmailLink, peekEmailLink, useEmailLink } from '../sign-up/email-links.js'
import {
  accountDeletedMail,
  emailChangeMail,
  emailChangeRequestedMail,
  emailChangeTakenMail,
  emailChangedMail,
  passwordChangedMail,
} from '../mails.js'
import { type Reauthentication, reauthenticate } from '../sessions/reauthenticate.js'
import { closeOtherDoors } from '../recovery/recovery.js'
import { endSessionsOfUser } from '../sessions/end-sessions.js'

/*
 * The "Account" pages' use cases (docs/accounts.md "Your account"). Each change is one function, so that
 * an audit event can be added in one place. Each that could take the account over asks for
 * the current password first (reauthenticate).
 */

type Refused = Exclude<Reauthentication, { kind: 'ok' }>

export type ChangePasswordResult = { readonly kind: 'changed'; readonly endedSessions: number; readonly mailSent: boolean } | Refused

/**
 * A new password (already checked against the rules), asked with the current one. Every other
 * session of the account ends, with the refresh-token families approved in it (endSessionsOfUser:
 * whoever learned the old password is shut out of the applications they approved too), and every
 * mailed link and device cookie is void (closeOtherDoors); the browser that changed it stays
 * logged in, and so do its families. A notice goes to the account's address.
 */
export async function changePassword(
  ctx: AccountContext,
  change: { userId: string; sessionId: string | undefined; currentPassword: string; newPassword: string },
  audit: AuditTrail,
): Promise<ChangePasswordResult> {
  const check = await reauthenticate(ctx, change.userId, change.currentPassword)
  if (check.kind !== 'ok') return check
  const passwordHash = await hashPassword(change.newPassword)
  const now = ctx.clock()
  const endedSessions = await ctx.db.transaction().execute(async (trx) => {
    await setPasswordHash(trx, change.userId, passwordHash)
    await closeOtherDoors(trx, change.userId, now)
    const keep = change.sessionId === undefined ? undefined : sha256Hex(change.sessionId)
    return endSessionsOfUser({ db: trx, bus: ctx.bus }, change.userId, now, keep)
  })
  await audit.record({ event: 'user.password_changed', userId: change.userId, detail: `${endedSessions} other sessions ended` })
  return { kind: 'changed', endedSessions, mailSent: await ctx.mailer.send(passwordChangedMail(ctx, check.email, 'changed')) }
}

export type EmailChangeRequest =
  | { readonly kind: 'sent'; readonly mailSent: boolean }
  | { readonly kind: 'same-address' }
  /** EMAIL_CHANGE_LIMIT or EMAIL_CHANGE_ADDRESS_LIMIT reached: nothing is sent. */
  | { readonly kind: 'too-many-requests'; readonly retryAfterSeconds: number }
  | Refused

/**
 * Asks to move the account to `newEmail` (already checked as an address), with the current
 * password. The account keeps its address until the link mailed to the new one is opened, and
 * the old address is told at once, with a link that cancels the change (whoever asked may have
 * learned the password). The answer does not say whether another account holds the new address:
 * that address then gets a notice instead of a link, and nothing changes.
 */
export async function requestEmailChange(
  ctx: AccountContext,
  change: { userId: string; currentPassword: string; newEmail: string },
): Promise<EmailChangeRequest> {
  const check = await reauthenticate(ctx, change.userId, change.currentPassword)
  if (check.kind !== 'ok') return check
  if (check.email === change.newEmail) return { kind: 'same-address' }
  // Each request mails the new address and stores a link for a day: bounded per account, and per
  // address so that many accounts cannot flood one inbox (docs/operating/limits.md).
  const slots = await takeSlots(ctx.db, ctx.clock, [
    rateRule(RATE_LIMITS.emailChange, change.userId, ctx.limits),
    rateRule(RATE_LIMITS.emailChangeAddress, change.newEmail, ctx.limits),
  ])
  if (!slots.allowed) return { kind: 'too-many-requests', retryAfterSeconds: slots.retryAfterSeconds }
  if (await findUserByEmail(ctx.db, change.newEmail)) {
    return { kind: 'sent', mailSent: await ctx.mailer.send(emailChangeTakenMail(ctx, change.newEmail)) }
  }
  const now = ctx.clock()
  const links = await ctx.db.transaction().execute(async (trx) => {
    // Only the latest request can complete: asking again voids the links of earlier ones.
    await voidEmailTokens(trx, change.userId, 'change-email', now)
    await voidEmailTokens(trx, change.userId, 'cancel-email-change', now)
    const confirm = await issueEmailLink(trx, ctx.publicUrl, {
      purpose: 'change-email',
      userId: change.userId,
      email: change.newEmail,
      now,
    })
    const cancel = await issueEmailLink(trx, ctx.publicUrl, {
      purpose: 'cancel-email-change',
      userId: change.userId,
      email: check.email,
      now,
    })
    return { confirm, cancel }
  })
  await ctx.mailer.send(emailChangeRequestedMail(ctx, check.email, change.newEmail, links.cancel))
  return { kind: 'sent', mailSent: await ctx.mailer.send(emailChangeMail(ctx, change.newEmail, links.confirm)) }
}

/**
 * The new address of a working email-change link and the account it belongs to, with that
 * account's current address (the page names the account that takes the new one), without using it.
 */
export async function emailChangeLink(ctx: AccountContext, token: unknown) {
  const link = await peekEmailLink(ctx.db, 'change-email', token, ctx.clock())
  const user = link && (await findUserById(ctx.db, link.user_id))
  return link && user ? { ...link, accountEmail: user.email } : undefined
}

export type EmailChangeResult =
  | { readonly kind: 'changed'; readonly userId: string; readonly newEmail: string }
  | { readonly kind: 'invalid' }
  /** Another account took the address since the link was sent; the link stays unused. */
  | { readonly kind: 'taken' }
  /** The browser is logged in to another account than the link's: nothing is done. */
  | { readonly kind: 'other-account' }
  /** The browser is not logged in: only the account that asked may confirm; the link stays unused. */
  | { readonly kind: 'needs-login' }
  /** An operator suspended the account: nothing about it changes until they unsuspend it; the link stays unused. */
  | { readonly kind: 'suspended' }

class AddressTaken extends Error {}
/** Rolls back the transaction that used the link, so that the link is not spent on a refusal. */
class AccountSuspended extends Error {}

/**
 * Uses an email-change link: the account it was made for (and only that one) gets the new
 * address, verified, and the old address is told. `loggedInUserId`: the account of the browser
 * that opened it; it must be the link's. Holding the new mailbox alone is not enough: otherwise
 * whoever reads a mistyped or planted address could confirm it, and the requester's account would
 * assert that address as verified in UserInfo and ID Tokens (OpenID Connect Core 5.1,
 * `email_verified`).
 */
export async function confirmEmailChange(
  ctx: AccountContext,
  token: unknown,
  loggedInUserId: string | undefined,
  audit: AuditTrail,
): Promise<EmailChangeResult> {
  const now = ctx.clock()
  const link = await peekEmailLink(ctx.db, 'change-email', token, now)
  if (!link) return { kind: 'invalid' }
  if (loggedInUserId === undefined) return { kind: 'needs-login' }
  if (loggedInUserId !== link.user_id) return { kind: 'other-account' }
  let oldEmail: string | undefined
  try {
    oldEmail = await ctx.db.transaction().execute(async (trx) => {
      // The user first, as cancelEmailChange does: a cancellation that committed meanwhile has
      // voided the link, which the UPDATE below then finds used.
      const user = await lockUser(trx, link.user_id)
      const used = user && (await useEmailLink(trx, 'change-email', token, now, user.id))
      if (!used || !user) return undefined
      // Under the row lock that suspendUser takes: a suspension committed first is seen here.
      if (user.suspended_at !== null) throw new AccountSuspended()
      if (!(await changeEmail(trx, user.id, used.email, now))) throw new AddressTaken()
      // Nothing is left to cancel. Verification links sent to the old address are void from
      // now on (they name it).
      await voidEmailTokens(trx, user.id, 'cancel-email-change', now)
      return user.email
    })
  } catch (err) {
    if (err instanceof AddressTaken) return { kind: 'taken' }
    if (err instanceof AccountSuspended) return { kind: 'suspended' }
    throw err
  }
  if (oldEmail === undefined) return { kind: 'invalid' }
  // No addresses in the detail: the log outlives an address change, and the owner knows both.
  await audit.record({ event: 'user.email_changed', userId: link.user_id, actorId: link.user_id })
  await ctx.mailer.send(emailChangedMail(ctx, oldEmail, link.email))
  return { kind: 'changed', userId: link.user_id, newEmail: link.email }
}

/** The account whose change of address a working cancel link stops, without using it. */
export function emailChangeCancelLink(ctx: AccountContext, token: unknown) {
  return peekEmailLink(ctx.db, 'cancel-email-change', token, ctx.clock())
}

/**
 * Uses a cancel link mailed to the old address: every pending change of address of the account
 * is void, so confirmEmailChange refuses its link. Needs no session: the link proves the old
 * address, which is all an owner whose password was stolen may still hold. True when cancelled.
 */
export async function cancelEmailChange(ctx: AccountContext, token: unknown, audit: AuditTrail): Promise<boolean> {
  const now = ctx.clock()
  const link = await peekEmailLink(ctx.db, 'cancel-email-change', token, now)
  if (!link) return false
  const cancelled = await ctx.db.transaction().execute(async (trx) => {
    const user = await lockUser(trx, link.user_id)
    const used = user && (await useEmailLink(trx, 'cancel-email-change', token, now, user.id))
    // A link sent to an address the account has left cancels nothing.
    if (!user || !used || used.email !== user.email) return false
    await voidEmailTokens(trx, user.id, 'change-email', now)
    return true
  })
  if (cancelled) await audit.record({ event: 'user.email_change_cancelled', userId: link.user_id, actorId: null })
  return cancelled
}

export type CloseAccountResult = { readonly kind: 'deleted'; readonly mailSent: boolean } | Refused

/**
 * "Delete account", asked with the password: deleteUserAccount, then a confirmation to the
 * address the account had.
 */
export async function closeAccount(ctx: AccountContext, userId: string, password: string, audit: AuditTrail): Promise<CloseAccountResult> {
  const check = await reauthenticate(ctx, userId, password)
  if (check.kind !== 'ok') return check
  const deleted = await deleteUserAccount(ctx, userId, ctx.clock())
  if (!deleted) return { kind: 'deleted', mailSent: false }
  // The account is gone: the event concerns nobody's Security log but the operators' view.
  await audit.record({ event: 'user.deleted', userId: null, actorId: null, detail: `${deleted.applications} applications deleted` })
  return { kind: 'deleted', mailSent: await ctx.mailer.send(accountDeletedMail(ctx, deleted.email)) }
}
