import { type Actor, trailOf } from '../audit/actor.js'
import type { AuditLog } from '../audit/audit-log.js'
import type { Db } from '../db/connect.js'
import type { Application, ApplicationKind } from '../db/schema.js'
import type { Clock } from '../lib/clock.js'
import type { ApplicationSettings, ApplicationSummary } from '../repositories/applications.js'
import type { RevocationBus } from '../revocation/bus.js'
import {
  type Registration,
  deleteApplication,
  findApplication,
  listApplications,
  mayRegisterApplication,
  changeApplicationKind,
  type KindChange,
  regenerateSecret,
  registerApplication,
  updateApplication,
} from '../applications/applications.js'
import { type TokenPolicyChange, changeApplicationTokenPolicy } from '../applications/token-policy-change.js'
import type { TokenPolicy } from '../applications/token-policy.js'

/*
 * "Your Applications" (docs/accounts.md "Your account"), built once in src/services.ts: every use case acts
 * for the logged-in owner, only on their own applications, within MAX_APPLICATIONS_PER_USER, and
 * registers only for a verified address.
 */

/** The logged-in owner as the console acts for them: the audit log's actor, and whether their address is verified. */
export interface Owner extends Actor {
  readonly userId: string
  readonly emailVerified: boolean
}

/** Whether the owner may register an application now: a verified address, and below the quota. */
export type RegistrationCheck = { kind: 'allowed' } | { kind: 'unverified' } | { kind: 'quota-reached'; limit: number }

export interface ConsoleUseCases {
  /** The owner's applications, newest first, and MAX_APPLICATIONS_PER_USER with whether they reached it. */
  listApplications(owner: Owner): Promise<{ applications: ApplicationSummary[]; quota: { limit: number; reached: boolean } }>
  mayRegister(owner: Owner): Promise<RegistrationCheck>
  /** Whether the owner must verify their address before registering (answered before the form is read). */
  needsVerification(owner: Owner): boolean
  registerApplication(owner: Owner, settings: ApplicationSettings): Promise<Registration | { kind: 'unverified' }>
  /** The owner's application; undefined for another owner's, as for one that does not exist. */
  findApplication(owner: Owner, id: string): Promise<Application | undefined>
  /** Saves the settings of `before` (as the edit form read it, so the audit log says what changed). */
  /** `verificationCleared`: the change withdrew an operator's verification (src/applications/applications.ts). */
  updateApplication(
    owner: Owner,
    before: Application,
    settings: ApplicationSettings,
  ): Promise<{ application: Application; verificationCleared: boolean } | undefined>
  regenerateSecret(owner: Owner, id: string): Promise<{ application: Application; clientSecret: string } | undefined>
  deleteApplication(owner: Owner, id: string): Promise<boolean>
  /** Web, native, single-page or machine, with the secret that kind has (docs/decisions/019-public-clients-and-consent.md). */
  changeKind(owner: Owner, id: string, kind: ApplicationKind): Promise<KindChange>
  /** DPoP optional or required, tokens valid until revoked or expiring (docs/applications.md "Token policy"). */
  changeTokenPolicy(owner: Owner, id: string, policy: TokenPolicy): Promise<TokenPolicyChange>
}

export interface ConsoleDeps {
  db: Db
  bus: RevocationBus
  clock: Clock
  audit: AuditLog
  /** MAX_APPLICATIONS_PER_USER. */
  applicationsPerUser: number
}

export function consoleUseCases({ db, bus, clock, audit, applicationsPerUser: limit }: ConsoleDeps): ConsoleUseCases {
  return {
    async listApplications(owner) {
      const applications = await listApplications(db, owner.userId)
      return { applications, quota: { limit, reached: applications.length >= limit } }
    },
    async mayRegister(owner) {
      if (!owner.emailVerified) return { kind: 'unverified' }
      return (await mayRegisterApplication(db, owner.userId, limit)) ? { kind: 'allowed' } : { kind: 'quota-reached', limit }
    },
    // Its owner's email is the developer's identity on consent pages (docs/accounts.md "Your account").
    needsVerification: (owner) => !owner.emailVerified,
    async registerApplication(owner, settings) {
      if (!owner.emailVerified) return { kind: 'unverified' }
      return registerApplication(db, owner.userId, settings, clock(), limit, trailOf(audit, owner))
    },
    findApplication: (owner, id) => findApplication(db, id, owner.userId),
    updateApplication: (owner, before, settings) => updateApplication(db, before, owner.userId, settings, clock(), trailOf(audit, owner)),
    regenerateSecret: (owner, id) => regenerateSecret(db, bus, id, owner.userId, clock(), trailOf(audit, owner)),
    deleteApplication: (owner, id) => deleteApplication(db, bus, id, owner.userId, clock(), trailOf(audit, owner)),
    changeKind: (owner, id, kind) => changeApplicationKind(db, bus, { id, ownerId: owner.userId, kind }, clock(), trailOf(audit, owner)),
    changeTokenPolicy: (owner, id, policy) =>
      changeApplicationTokenPolicy(db, { id, ownerId: owner.userId, policy }, clock(), trailOf(audit, owner)),
  }
}
