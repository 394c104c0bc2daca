import type { Db } from '../db/connect.js'
import type { Application } from '../db/schema.js'
import { digest, generateClientId, generateClientSecret } from '../lib/tokens.js'
import { isUuid } from '../lib/uuid.js'
import {
  type ApplicationSettings,
  type ApplicationSummary,
  countApplicationsByOwner,
  deleteOwnedApplication,
  findOwnedApplication,
  insertApplication,
  listApplicationsByOwner,
  lockOwnedApplication,
  replaceOwnedApplicationSecret,
  updateOwnedApplication,
} from '../repositories/applications.js'
import { lockUser } from '../repositories/users.js'
import type { RevocationBus } from '../revocation/bus.js'
import { revoke } from '../revocation/revoke.js'

/*
 * "Your Applications" use cases. Every function takes the owner's id and
 * acts only on that owner's applications: another user's application is indistinguishable from
 * one that does not exist, so the console answers 404 for both.
 */

/** The owner's applications, newest first. */
export function listApplications(db: Db, ownerId: string): Promise<ApplicationSummary[]> {
  return listApplicationsByOwner(db, ownerId)
}

export function findApplication(db: Db, id: string, ownerId: string): Promise<Application | undefined> {
  return isUuid(id) ? findOwnedApplication(db, id, ownerId) : Promise.resolve(undefined)
}

/** A new application with a new secret; the plaintext secret is returned for the one page that shows it. */
export async function createApplication(
  db: Db,
  ownerId: string,
  settings: ApplicationSettings,
  now: Date,
): Promise<{ application: Application; clientSecret: string }> {
  const clientSecret = generateClientSecret()
  const application = await insertApplication(db, {
    ...settings,
    clientId: generateClientId(),
    secretHash: digest(clientSecret),
    ownerId,
    now,
  })
  return { application, clientSecret }
}

/** Whether the owner may register another application (MAX_APPLICATIONS_PER_USER). */
export async function mayRegisterApplication(db: Db, ownerId: string, maxApplications: number): Promise<boolean> {
  return (await countApplicationsByOwner(db, ownerId)) < maxApplications
}

export type Registration = { kind: 'created'; application: Application; clientSecret: string } | { kind: 'quota-reached'; limit: number }

/**
 * "Register application" in the console, within MAX_APPLICATIONS_PER_USER (README "Limits and
 * quotas"). The owner's row is locked while counting, so two registrations sent at once cannot
 * both take the last place.
 */
export function registerApplication(
  db: Db,
  ownerId: string,
  settings: ApplicationSettings,
  now: Date,
  maxApplications: number,
): Promise<Registration> {
  return db.transaction().execute(async (trx): Promise<Registration> => {
    await lockUser(trx, ownerId)
    if (!(await mayRegisterApplication(trx, ownerId, maxApplications))) return { kind: 'quota-reached', limit: maxApplications }
    return { kind: 'created', ...(await createApplication(trx, ownerId, settings, now)) }
  })
}

export function updateApplication(
  db: Db,
  id: string,
  ownerId: string,
  settings: ApplicationSettings,
  now: Date,
): Promise<Application | undefined> {
  return isUuid(id) ? updateOwnedApplication(db, id, ownerId, settings, now) : Promise.resolve(undefined)
}

/**
 * Replaces the secret. Client authentication compares against the stored digest, so the old
 * secret fails from the moment the UPDATE commits. Tokens already issued stay valid: they were
 * granted by users, not by the secret (as GitHub and Doorkeeper do); deleting the application
 * is how to end them all.
 */
export async function regenerateSecret(
  db: Db,
  bus: RevocationBus,
  id: string,
  ownerId: string,
  now: Date,
): Promise<{ application: Application; clientSecret: string } | undefined> {
  if (!isUuid(id)) return undefined
  const clientSecret = generateClientSecret()
  // The old secret must stop working at once everywhere: processes that cached the client's
  // authentication drop it when this notice commits with the new digest.
  return db.transaction().execute(async (trx) => {
    const application = await replaceOwnedApplicationSecret(trx, id, ownerId, digest(clientSecret), now)
    if (!application) return undefined
    await revoke({ db: trx, bus }, { kind: 'client-credentials', clientId: application.client_id }, now)
    return { application, clientSecret }
  })
}

/**
 * Deletes the application with its grants, codes and tokens (ON DELETE CASCADE), and in the
 * same transaction announces the revocation, so that token caches (here and in resource APIs'
 * verifiers) drop its tokens exactly when the delete commits.
 */
export async function deleteApplication(db: Db, bus: RevocationBus, id: string, ownerId: string, now: Date): Promise<boolean> {
  if (!isUuid(id)) return false
  // Locked, then revoked while its tokens can still be listed, then deleted: all in one
  // transaction, so the digests announced are exactly the tokens the delete removes.
  return db.transaction().execute(async (trx) => {
    if (!(await lockOwnedApplication(trx, id, ownerId))) return false
    await revoke({ db: trx, bus }, { kind: 'application', applicationId: id }, now)
    return deleteOwnedApplication(trx, id, ownerId)
  })
}
