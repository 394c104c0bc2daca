import { deleteUserAccount } from '../accounts/settings/delete-account.js'
import { closeOtherDoors } from '../accounts/recovery/recovery.js'
import { endSessionsOfUser } from '../accounts/sessions/end-sessions.js'
import type { AuditEvent, AuditEventName } from '../audit/audit-log.js'
import { removeApplication } from '../applications/applications.js'
import type { Db } from '../db/connect.js'
import {
  type ApplicationListing,
  type ApplicationWithOwner,
  findApplicationForOperator,
  listApplicationsForOperator,
  lockApplication,
  setApplicationFlags,
  suspendApplicationsOfOwner,
  unsuspendApplicationsOfOwner,
} from '../repositories/operator-applications.js'
import {
  type UserListing,
  findUserByEmail,
  findUserById,
  listUsers,
  lockUser,
  setOperator,
  setUserSuspended,
} from '../repositories/users.js'
import type { User } from '../db/schema.js'
import type { RevocationBus } from '../revocation/bus.js'
import { revoke } from '../revocation/revoke.js'

/*
 * What an operator can do (docs/operating/admin.md), once, for both of their tools: the
 * command line (src/cli/) and the admin pages (src/http/routes/admin/). Each action runs in one
 * transaction, revokes through src/revocation/revoke.ts (so every cache and resource server
 * hears of it), and is recorded in the audit log by the caller's `record`.
 */

/**
 * An operator action as the audit log records it (its names: `operator.*` in src/audit/audit-log.ts,
 * and `application.resources_changed`, which only an operator does: src/operator/resources.ts).
 */
export type OperatorEvent = AuditEvent & { event: Extract<AuditEventName, `operator.${string}` | 'application.resources_changed'> }

export interface OperatorContext {
  db: Db
  bus: RevocationBus
  /** Writes the audit event with the acting operator and their address, if any; never rejects (src/audit/). */
  record(event: OperatorEvent): Promise<void>
}

/** A name the operator typed that matches nothing: a user error, said in one line. */
export class NotFoundError extends Error {
  override name = 'NotFoundError'
}

/** An action the operator asked for that Gatehouse will not do, and why: said in one line. */
export class RefusedError extends Error {
  override name = 'RefusedError'
}

export const PAGE_SIZE = 50

const MAX_SEARCH = 200

function searchText(query: string | undefined): string {
  return (query ?? '').trim().slice(0, MAX_SEARCH)
}

/* Users */

export function findUser(db: Db, email: string): Promise<User | undefined> {
  return findUserByEmail(db, email.trim().toLowerCase())
}

export async function requireUserByEmail(db: Db, email: string): Promise<User> {
  const user = await findUser(db, email)
  if (!user) throw new NotFoundError(`No user has the email ${email.trim()}.`)
  return user
}

export async function requireUserById(db: Db, id: string): Promise<User> {
  const user = await findUserById(db, id)
  if (!user) throw new NotFoundError('No such user.')
  return user
}

export function searchUsers(db: Db, options: { query?: string; page?: number; operatorsOnly?: boolean } = {}): Promise<UserListing[]> {
  const page = Math.max(1, options.page ?? 1)
  return listUsers(db, {
    query: searchText(options.query),
    limit: PAGE_SIZE,
    offset: (page - 1) * PAGE_SIZE,
    operatorsOnly: options.operatorsOnly,
  })
}

/** `gatehouse admin add|remove`: the only way to become, or stop being, an operator. */
export async function setOperatorRole(ctx: OperatorContext, email: string, on: boolean): Promise<{ user: User; changed: boolean }> {
  const user = await requireUserByEmail(ctx.db, email)
  if (user.is_operator === on) return { user, changed: false }
  // Sign-up answers alike for a taken address, so whoever signed up first with the operator's
  // address holds an account under it; only a followed verification link shows the holder reads it.
  if (on && user.email_verified_at === null) {
    throw new RefusedError(
      `${user.email} has not verified its address (anyone can sign up with any address): log in as it, follow the link in the verification mail, then run this again.`,
    )
  }
  await setOperator(ctx.db, user.id, on)
  await ctx.record({ event: on ? 'operator.added' : 'operator.removed', userId: user.id })
  return { user: { ...user, is_operator: on }, changed: true }
}

/**
 * Suspends the account: it cannot log in (a neutral refusal), its sessions end (endSessionsOfUser;
 * the suspension's revocation ends every other refresh-token family of the account too), its
 * mailed links and device cookies are void (closeOtherDoors), its tokens and pending codes are
 * revoked (announced), and its applications are suspended with it. The
 * applications take the account's suspension time, so that unsuspending the account restores
 * exactly those and not one an operator suspended on its own.
 */
export async function suspendUser(ctx: OperatorContext, userId: string, now: Date): Promise<{ changed: boolean }> {
  const result = await ctx.db.transaction().execute(async (trx) => {
    const user = await lockUser(trx, userId)
    if (!user) throw new NotFoundError('No such user.')
    if (user.suspended_at !== null) return { user, changed: false }
    await setUserSuspended(trx, userId, now)
    await endSessionsOfUser({ db: trx, bus: ctx.bus }, userId, now)
    await closeOtherDoors(trx, userId, now)
    await revoke({ db: trx, bus: ctx.bus }, { kind: 'user-suspended', userId }, now)
    for (const applicationId of await suspendApplicationsOfOwner(trx, userId, now)) {
      await revoke({ db: trx, bus: ctx.bus }, { kind: 'application-suspended', applicationId }, now)
    }
    return { user, changed: true }
  })
  if (result.changed) await ctx.record({ event: 'operator.user_suspended', userId })
  return { changed: result.changed }
}

export async function unsuspendUser(ctx: OperatorContext, userId: string): Promise<{ changed: boolean; applications: number }> {
  const result = await ctx.db.transaction().execute(async (trx) => {
    const user = await lockUser(trx, userId)
    if (!user) throw new NotFoundError('No such user.')
    if (user.suspended_at === null) return { changed: false, applications: 0 }
    const applications = await unsuspendApplicationsOfOwner(trx, userId, user.suspended_at)
    await setUserSuspended(trx, userId, null)
    return { changed: true, applications }
  })
  if (result.changed)
    await ctx.record({ event: 'operator.user_unsuspended', userId, detail: `${result.applications} applications restored` })
  return result
}

/**
 * Deletes the account as its owner's "Delete account" does (deleteUserAccount): its
 * applications (each revoked and announced as a deletion), its tokens for other applications
 * (announced), its grants, codes and sessions.
 */
export async function deleteUser(ctx: OperatorContext, userId: string, now: Date): Promise<{ email: string; applications: number }> {
  const deleted = await deleteUserAccount(ctx, userId, now)
  if (!deleted) throw new NotFoundError('No such user.')
  // The account is gone, so the event concerns nobody's log but the operators'.
  await ctx.record({ event: 'operator.user_deleted', userId: null, detail: `${deleted.applications} applications deleted` })
  return deleted
}

/* Applications */

export function searchApplications(
  db: Db,
  options: { query?: string; page?: number; ownerId?: string; metadataClients?: boolean } = {},
): Promise<ApplicationListing[]> {
  const page = Math.max(1, options.page ?? 1)
  return listApplicationsForOperator(db, {
    query: searchText(options.query),
    limit: PAGE_SIZE,
    offset: (page - 1) * PAGE_SIZE,
    ownerId: options.ownerId,
    metadataClients: options.metadataClients,
  })
}

export async function requireApplication(db: Db, where: { clientId: string } | { id: string }): Promise<ApplicationWithOwner> {
  const app = await findApplicationForOperator(db, where)
  if (!app) throw new NotFoundError('clientId' in where ? `No application has the client_id ${where.clientId}.` : 'No such application.')
  return app
}

function subject(app: ApplicationWithOwner) {
  return { userId: app.owner_id, application: { clientId: app.client_id, name: app.name } }
}

/**
 * Suspends the application: its tokens are revoked and its pending codes deleted (announced:
 * every cache drops them within a second, and its revocation streams end), it authenticates
 * nowhere, and /oauth/authorize shows an error page for it.
 */
export async function suspendApplication(
  ctx: OperatorContext,
  applicationId: string,
  now: Date,
): Promise<{ changed: boolean; revoked: number }> {
  const app = await requireApplication(ctx.db, { id: applicationId })
  const revoked = await ctx.db.transaction().execute(async (trx) => {
    const row = await lockApplication(trx, applicationId)
    if (!row) throw new NotFoundError('No such application.')
    if (row.suspended_at !== null) return null
    await setApplicationFlags(trx, applicationId, { suspended_at: now })
    return revoke({ db: trx, bus: ctx.bus }, { kind: 'application-suspended', applicationId }, now)
  })
  if (revoked !== null) await ctx.record({ event: 'operator.application_suspended', ...subject(app) })
  return { changed: revoked !== null, revoked: revoked ?? 0 }
}

/** Allows new authorizations again; the tokens revoked by the suspension stay revoked. */
export async function unsuspendApplication(ctx: OperatorContext, applicationId: string): Promise<{ changed: boolean }> {
  const app = await requireApplication(ctx.db, { id: applicationId })
  if (app.suspended_at === null) return { changed: false }
  await setApplicationFlags(ctx.db, applicationId, { suspended_at: null })
  await ctx.record({ event: 'operator.application_unsuspended', ...subject(app) })
  return { changed: true }
}

/**
 * A metadata document's client is vouched for by nobody and rewritten from its document at each
 * fetch (docs/decisions/026-client-metadata-documents.md): it is never verified, made a resource
 * server or deleted by an operator, only suspended.
 */
function refuseMetadataClient(app: { metadata_fetched_at: Date | null }, what: string): void {
  if (app.metadata_fetched_at !== null) {
    throw new RefusedError(`A client without registration is not ${what}: suspend it, and block its host to keep it out (docs/agents.md).`)
  }
}

/** Verified: "Verified by <SERVICE_NAME>" on its consent page, and its error responses redirected. */
export async function setVerified(ctx: OperatorContext, applicationId: string, on: boolean, now: Date): Promise<{ changed: boolean }> {
  const app = await requireApplication(ctx.db, { id: applicationId })
  refuseMetadataClient(app, 'verified')
  if ((app.verified_at !== null) === on) return { changed: false }
  await setApplicationFlags(ctx.db, applicationId, { verified_at: on ? now : null })
  await ctx.record({ event: on ? 'operator.application_verified' : 'operator.application_unverified', ...subject(app) })
  return { changed: true }
}

/**
 * A resource server may introspect any token, sees `username`, and may subscribe to the
 * revocation stream. The change is announced like a new secret, so every process drops its
 * cached authentication of the client (and ends its streams) at once.
 */
export async function setResourceServer(
  ctx: OperatorContext,
  applicationId: string,
  on: boolean,
  now: Date,
): Promise<{ changed: boolean }> {
  const app = await requireApplication(ctx.db, { id: applicationId })
  refuseMetadataClient(app, 'made a resource server')
  if (app.is_resource_server === on) return { changed: false }
  await ctx.db.transaction().execute(async (trx) => {
    await setApplicationFlags(trx, applicationId, { is_resource_server: on })
    await revoke({ db: trx, bus: ctx.bus }, { kind: 'client-changed', clientId: app.client_id }, now)
  })
  await ctx.record({ event: on ? 'operator.resource_server_on' : 'operator.resource_server_off', ...subject(app) })
  return { changed: true }
}

/** Deletes any application through the owner's own deletion (removeApplication): tokens revoked and announced, then the row. */
export async function deleteApplicationAsOperator(ctx: OperatorContext, applicationId: string, now: Date): Promise<void> {
  const app = await requireApplication(ctx.db, { id: applicationId })
  // A metadata document's client would be stored again by its next request: it is suspended instead (docs/agents.md).
  refuseMetadataClient(app, 'deleted')
  if (app.owner_id === null || !(await removeApplication(ctx.db, ctx.bus, applicationId, app.owner_id, now))) {
    throw new NotFoundError('No such application.')
  }
  await ctx.record({ event: 'operator.application_deleted', ...subject(app) })
}

/**
 * `gatehouse tokens revoke`: every token of the application, or only one user's (whose grant
 * and pending codes go too, as "Revoke access" does, so the application cannot get new tokens
 * without asking again).
 */
export async function revokeApplicationTokens(
  ctx: OperatorContext,
  applicationId: string,
  userId: string | undefined,
  now: Date,
): Promise<{ revoked: number }> {
  const app = await requireApplication(ctx.db, { id: applicationId })
  const revoked =
    userId === undefined
      ? await revoke(ctx, { kind: 'application-tokens-revoked', applicationId }, now)
      : await revoke(ctx, { kind: 'access-revoked', userId, applicationId }, now)
  await ctx.record({
    event: 'operator.tokens_revoked',
    userId: userId ?? app.owner_id,
    application: { clientId: app.client_id, name: app.name },
    detail: `${revoked} tokens revoked${userId === undefined ? '' : ' for one user'}`,
  })
  return { revoked }
}
