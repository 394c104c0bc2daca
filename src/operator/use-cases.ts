import { type Actor, trailOf } from '../audit/actor.js'
import type { AuditLog } from '../audit/audit-log.js'
import { type AuditLogPage, type OperatorAuditFilter, readAuditLog } from '../audit/audit-pages.js'
import type { Db } from '../db/connect.js'
import type { User } from '../db/schema.js'
import type { Clock } from '../lib/clock.js'
import { isUuid } from '../lib/uuid.js'
import type { MailFrame } from '../accounts/mails.js'
import type { Mailer } from '../mail/mailer.js'
import { type SecondFactorSummary, secondFactorSummary } from '../repositories/second-factor.js'
import { countMetadataClients } from '../repositories/metadata-clients.js'
import type { ApplicationListing, ApplicationWithOwner } from '../repositories/operator-applications.js'
import type { UserListing } from '../repositories/users.js'
import type { RevocationBus } from '../revocation/bus.js'
import {
  NotFoundError,
  type OperatorContext,
  deleteApplicationAsOperator,
  deleteUser,
  findUser,
  requireApplication,
  requireUserByEmail,
  requireUserById,
  revokeApplicationTokens,
  searchApplications,
  searchUsers,
  setOperatorRole,
  setResourceServer,
  setVerified,
  suspendApplication,
  suspendUser,
  unsuspendApplication,
  unsuspendUser,
} from './moderation.js'
import { type SecondFactorReset, resetSecondFactor } from './second-factor-reset.js'
import { type Activity, cachedActivity } from './activity.js'
import { type ClientCredentialsChange, setClientCredentials } from './client-credentials.js'
import type { ScopeVocabulary } from '../oauth/index.js'
import { type ResourcesChange, type ResourcesView, changeResources, resourcesOf } from './resources.js'

/*
 * The operator's use cases (docs/operating/admin.md), built once in src/services.ts for both
 * of their tools, the admin pages and the command line: each takes the acting operator, reads the
 * time from the clock, and records its audit event through the actor's trail.
 */

/** An operator acting on their own account from the pages: refused (the command line can). */
export class OwnAccountError extends Error {
  override name = 'OwnAccountError'
  constructor() {
    super('An operator does not suspend, delete or reset the second factor of their own account from the admin pages.')
  }
}

export interface OperatorUseCases {
  searchUsers(options?: { query?: string; page?: number; operatorsOnly?: boolean }): Promise<UserListing[]>
  /** `metadataClients`: only the clients of metadata documents (docs/agents.md). */
  searchApplications(options?: {
    query?: string
    page?: number
    ownerId?: string
    metadataClients?: boolean
  }): Promise<ApplicationListing[]>
  /** How many clients of metadata documents are stored, against CLIENT_ID_METADATA_MAX_CLIENTS (docs/agents.md). */
  metadataClientCount(): Promise<number>
  /** The user with this email; NotFoundError when there is none. */
  userByEmail(email: string): Promise<User>
  /** The user with this id, or undefined (an id that is no UUID included). */
  userById(id: string): Promise<User | undefined>
  /** The application with this client_id; NotFoundError when there is none. */
  applicationByClientId(clientId: string): Promise<ApplicationWithOwner>
  applicationById(id: string): Promise<ApplicationWithOwner | undefined>
  /** Whether the actor may suspend, unsuspend or delete this account: not their own. */
  mayModerate(actor: Actor, userId: string): boolean
  setOperatorRole(actor: Actor, email: string, on: boolean): Promise<{ user: User; changed: boolean }>
  suspendUser(actor: Actor, userId: string): Promise<{ changed: boolean }>
  unsuspendUser(actor: Actor, userId: string): Promise<{ changed: boolean; applications: number }>
  deleteUser(actor: Actor, userId: string): Promise<{ email: string; applications: number }>
  /** The account's TOTP, passkeys and recovery codes left, for the admin user page. */
  secondFactorOf(userId: string): Promise<SecondFactorSummary>
  /**
   * Removes the account's second factor and ends its sessions; grants and tokens stay
   * (src/operator/second-factor-reset.ts). Not the acting operator's own account from the pages.
   */
  resetSecondFactor(actor: Actor, userId: string): Promise<SecondFactorReset>
  suspendApplication(actor: Actor, applicationId: string): Promise<{ changed: boolean; revoked: number }>
  unsuspendApplication(actor: Actor, applicationId: string): Promise<{ changed: boolean }>
  setVerified(actor: Actor, applicationId: string, on: boolean): Promise<{ changed: boolean }>
  setResourceServer(actor: Actor, applicationId: string, on: boolean): Promise<{ changed: boolean }>
  deleteApplication(actor: Actor, applicationId: string): Promise<void>
  /**
   * The client credentials grant of a machine application (src/operator/client-credentials.ts):
   * its scopes, space-separated, or null to turn it off.
   */
  setClientCredentials(actor: Actor, applicationId: string, scopes: string | null): Promise<ClientCredentialsChange>
  /** RFC 8707: the resource identifiers the application declared and the lifetime of tokens for them (src/operator/resources.ts). */
  resourcesOf(applicationId: string): Promise<ResourcesView>
  /** Adds and removes resource identifiers and sets the lifetime; audited as `application.resources_changed`. */
  changeResources(actor: Actor, applicationId: string, change: ResourcesChange): Promise<ResourcesView & { changed: boolean }>
  /** `gatehouse tokens revoke`: every token of the application, or one user's. */
  revokeTokens(actor: Actor, applicationId: string, userId?: string): Promise<{ revoked: number }>
  /**
   * One page of the audit log (docs/operating/admin.md "Audit log"), newest first, from `cursor` on; the account
   * is named by email, and `unknownUser` says that no account has it (then no events).
   */
  readAuditLog(filter: AuditSearch, cursor: unknown): Promise<AuditLogPage & { unknownUser: boolean }>
  /** The dashboard's counts of the last 24 hours and 7 days, at most a minute old (src/operator/activity.ts). */
  activity(): Promise<Activity>
}

/** What the operator's audit page filters by: the account by its email. */
export type AuditSearch = Omit<OperatorAuditFilter, 'userId'> & { email?: string }

export interface OperatorDeps {
  db: Db
  bus: RevocationBus
  clock: Clock
  audit: AuditLog
  /** The user is told of a second-factor reset. */
  mailer: Mailer
  mailFrame: MailFrame
  /** What the client credentials grant may be given (docs/operating/scopes.md). */
  scopes: ScopeVocabulary
  /** PUBLIC_URL: an http loopback one lets resource identifiers be http loopback too, for development. */
  publicUrl: string
}

const orUndefined = <T>(found: Promise<T>): Promise<T | undefined> =>
  found.catch((err: unknown) => {
    if (err instanceof NotFoundError) return undefined
    throw err
  })

export function operatorUseCases({ db, bus, clock, audit, mailer, mailFrame, scopes, publicUrl }: OperatorDeps): OperatorUseCases {
  const ctx = (actor: Actor): OperatorContext => ({ db, bus, record: (event) => trailOf(audit, actor).record(event) })
  const mayModerate = (actor: Actor, userId: string) => actor.userId !== userId
  const moderated = (actor: Actor, userId: string) => {
    if (!mayModerate(actor, userId)) throw new OwnAccountError()
    return ctx(actor)
  }
  return {
    activity: cachedActivity(db, clock),
    searchUsers: (options) => searchUsers(db, options),
    searchApplications: (options) => searchApplications(db, options),
    metadataClientCount: () => countMetadataClients(db),
    userByEmail: (email) => requireUserByEmail(db, email),
    userById: async (id) => (isUuid(id) ? orUndefined(requireUserById(db, id)) : undefined),
    applicationByClientId: (clientId) => requireApplication(db, { clientId }),
    applicationById: async (id) => (isUuid(id) ? orUndefined(requireApplication(db, { id })) : undefined),
    mayModerate,
    setOperatorRole: (actor, email, on) => setOperatorRole(ctx(actor), email, on),
    suspendUser: async (actor, userId) => suspendUser(moderated(actor, userId), userId, clock()),
    unsuspendUser: async (actor, userId) => unsuspendUser(moderated(actor, userId), userId),
    deleteUser: async (actor, userId) => deleteUser(moderated(actor, userId), userId, clock()),
    secondFactorOf: (userId) => secondFactorSummary(db, userId),
    // Not their own from the pages (moderated): a session left open, or taken, must not be able to
    // strip the operator's account down to its password. Their own factors are changed where
    // every user changes theirs, with the password and a current factor; or by another operator,
    // or on the command line, which needs the server's machine.
    resetSecondFactor: async (actor, userId) => resetSecondFactor({ ...moderated(actor, userId), mailer, mailFrame }, userId, clock()),
    suspendApplication: (actor, id) => suspendApplication(ctx(actor), id, clock()),
    unsuspendApplication: (actor, id) => unsuspendApplication(ctx(actor), id),
    setVerified: (actor, id, on) => setVerified(ctx(actor), id, on, clock()),
    setResourceServer: (actor, id, on) => setResourceServer(ctx(actor), id, on, clock()),
    deleteApplication: (actor, id) => deleteApplicationAsOperator(ctx(actor), id, clock()),
    setClientCredentials: (actor, id, granted) => setClientCredentials({ ...ctx(actor), scopes }, id, granted, clock()),
    resourcesOf: (id) => resourcesOf({ db }, id),
    changeResources: (actor, id, change) => changeResources({ ...ctx(actor), publicUrl }, id, change, clock()),
    revokeTokens: (actor, id, userId) => revokeApplicationTokens(ctx(actor), id, userId, clock()),
    async readAuditLog({ email, ...filter }, cursor) {
      const user = email === undefined ? undefined : await findUser(db, email)
      if (email !== undefined && user === undefined) return { events: [], older: null, unknownUser: true }
      return { ...(await readAuditLog(db, { ...filter, userId: user?.id }, cursor)), unknownUser: false }
    },
  }
}
