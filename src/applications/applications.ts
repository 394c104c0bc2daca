import { sha256Hex } from '../lib/crypto.js'
import { type ApplicationChange, type AuditEventName, type AuditTrail, auditDetail } from '../audit/audit-log.js'
import type { Db } from '../db/connect.js'
import type { Application, ApplicationKind } from '../db/schema.js'
import { generateClientId, generateClientSecret } from '../lib/tokens.js'
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
  lockOwnedApplicationRow,
  replaceOwnedApplicationSecret,
  setOwnedApplicationKind,
  updateOwnedApplication,
} from '../repositories/applications.js'
import { lockUserForQuota } from '../repositories/users.js'
import type { RevocationBus } from '../revocation/bus.js'
import { revoke } from '../revocation/revoke.js'
import { isPublicKind } from '../oauth/clients/kinds.js'

/*
 * "Your Applications" use cases. Every function takes the owner's id and
 * acts only on that owner's applications: another user's application is indistinguishable from
 * one that does not exist, so the console answers 404 for both. Each change is recorded in the
 * audit log once it has committed (src/audit/audit-log.ts), on the owner's Security log.
 */

/** The owner's applications, newest first. */
export function listApplications(db: Db, ownerId: string): Promise<ApplicationSummary[]> {
  return listApplicationsByOwner(db, ownerId)
}

export function findApplication(db: Db, id: string, ownerId: string): Promise<Application | undefined> {
  return isUuid(id) ? findOwnedApplication(db, id, ownerId) : Promise.resolve(undefined)
}

/** A public kind (native, single-page) gets no secret: it could not keep one (RFC 6749 2.1, 10.1). */
async function insertNewApplication(db: Db, ownerId: string, settings: ApplicationSettings, now: Date) {
  const clientSecret = isPublicKind(settings.kind ?? 'web') ? null : generateClientSecret()
  const application = await insertApplication(db, {
    ...settings,
    clientId: generateClientId(),
    secretHash: clientSecret === null ? null : sha256Hex(clientSecret),
    ownerId,
    now,
  })
  return { application, clientSecret }
}

function recordCreated(audit: AuditTrail, application: Application): Promise<void> {
  return recordOwnerEvent(audit, 'application.created', application, auditDetail.scopes(application.allowed_scopes))
}

/** An owner's action on their application, recorded with the application as it is now (docs/operating/admin.md "Audit log"). */
function recordOwnerEvent(audit: AuditTrail, event: AuditEventName, application: Application, detail: string): Promise<void> {
  return audit.record({
    event,
    userId: application.owner_id,
    application: { clientId: application.client_id, name: application.name },
    detail,
  })
}

/** Whether the owner may register another application (MAX_APPLICATIONS_PER_USER). */
export async function mayRegisterApplication(db: Db, ownerId: string, maxApplications: number): Promise<boolean> {
  return (await countApplicationsByOwner(db, ownerId)) < maxApplications
}

export type Registration =
  { kind: 'created'; application: Application; clientSecret: string | null } | { kind: 'quota-reached'; limit: number }

/**
 * "Register application" in the console, within MAX_APPLICATIONS_PER_USER (docs/operating/limits.md). The owner's row is locked while counting, so two registrations sent at once cannot
 * both take the last place.
 */
export async function registerApplication(
  db: Db,
  ownerId: string,
  settings: ApplicationSettings,
  now: Date,
  maxApplications: number,
  audit: AuditTrail,
): Promise<Registration> {
  const registration = await db.transaction().execute(async (trx): Promise<Registration> => {
    await lockUserForQuota(trx, ownerId)
    if (!(await mayRegisterApplication(trx, ownerId, maxApplications))) return { kind: 'quota-reached', limit: maxApplications }
    return { kind: 'created', ...(await insertNewApplication(trx, ownerId, settings, now)) }
  })
  // After the commit: the audit row references the owner, whose row the transaction locked.
  if (registration.kind === 'created') await recordCreated(audit, registration.application)
  return registration
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((v, i) => v === b[i])

/** Which settings differ between the application as it was and the new settings. */
function changeOf(before: Application, after: ApplicationSettings): ApplicationChange {
  return {
    name: before.name !== after.name,
    description: before.description !== after.description,
    redirectUris: !sameList(before.redirect_uris, after.redirectUris),
    postLogoutRedirectUris:
      after.postLogoutRedirectUris !== undefined && !sameList(before.post_logout_redirect_uris, after.postLogoutRedirectUris),
    allowedScopes: !sameList(before.allowed_scopes, after.allowedScopes),
    requirePkce: before.require_pkce !== after.requirePkce,
    allowImplicit: before.allow_implicit !== after.allowImplicit,
    idTokenAlg: before.id_token_alg !== after.idTokenAlg,
    requirePushedRequests: after.requirePushedRequests !== undefined && before.require_pushed_requests !== after.requirePushedRequests,
    allowDeviceFlow: after.allowDeviceFlow !== undefined && before.allow_device_flow !== after.allowDeviceFlow,
  }
}

/**
 * Whether the change withdraws an operator's verification. An operator vouches for what they
 * looked at: the name users see on the consent page, the redirect URIs that trusted errors go to
 * without asking (docs/decisions/005-trusted-redirects.md) and the links shown beside "Verified
 * by". Changing any of those makes it another application, to be looked at again. Scopes and
 * PKCE only narrow or widen what users are asked to grant, which the consent page shows them
 * each time; they do not change where Gatehouse sends anyone or whom it names, so they keep it.
 */
function withdrawsVerification(current: Application, after: ApplicationSettings): boolean {
  return (
    current.name !== after.name ||
    !sameList(current.redirect_uris, after.redirectUris) ||
    current.homepage_url !== (after.homepageUrl ?? null) ||
    current.privacy_policy_url !== (after.privacyPolicyUrl ?? null)
  )
}

/**
 * Saves the settings of the owner's application `before` (as the edit form's request read it,
 * so that the audit log can say what changed). `verificationCleared`: the operator's
 * verification was withdrawn by this change (withdrawsVerification), which the audit log records.
 */
export async function updateApplication(
  db: Db,
  before: Application,
  ownerId: string,
  settings: ApplicationSettings,
  now: Date,
  audit: AuditTrail,
): Promise<{ application: Application; verificationCleared: boolean } | undefined> {
  // The row is locked so that a verification committed while the owner edits is seen and withdrawn.
  const result = await db.transaction().execute(async (trx) => {
    const current = await lockOwnedApplicationRow(trx, before.id, ownerId)
    if (!current) return undefined
    const clearVerification = current.verified_at !== null && withdrawsVerification(current, settings)
    const application = await updateOwnedApplication(trx, before.id, ownerId, settings, now, { clearVerification })
    return application && { application, verificationCleared: clearVerification }
  })
  if (result) {
    const { application } = result
    await recordOwnerEvent(
      audit,
      'application.updated',
      application,
      auditDetail.applicationChanged(changeOf(before, settings), before.name),
    )
    if (result.verificationCleared) {
      await recordOwnerEvent(audit, 'application.verification_cleared', application, auditDetail.verificationCleared())
    }
  }
  return result
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
  audit: AuditTrail,
): Promise<{ application: Application; clientSecret: string } | undefined> {
  if (!isUuid(id)) return undefined
  const clientSecret = generateClientSecret()
  // The old secret must stop working at once everywhere: processes that cached the client's
  // authentication drop it when this notice commits with the new digest.
  const result = await db.transaction().execute(async (trx) => {
    const application = await replaceOwnedApplicationSecret(trx, id, ownerId, sha256Hex(clientSecret), now)
    if (!application) return undefined
    await revoke({ db: trx, bus }, { kind: 'client-changed', clientId: application.client_id }, now)
    // A machine's tokens were issued on nothing but the secret: a new one (a leak, say) ends them.
    if (application.kind === 'machine')
      await revoke({ db: trx, bus }, { kind: 'machine-tokens-revoked', applicationId: application.id }, now)
    return { application, clientSecret }
  })
  if (result) {
    const { application } = result
    await recordOwnerEvent(audit, 'application.secret_regenerated', application, auditDetail.secretRegenerated())
  }
  return result
}

export type KindChange =
  { kind: 'changed'; application: Application; clientSecret: string | null } | { kind: 'refused'; reason: string } | undefined

const KIND_WORDS: Record<ApplicationKind, string> = {
  web: 'web application',
  native: 'native app',
  spa: 'single-page app',
  machine: 'machine',
}

/**
 * Changes the kind of the owner's application (docs/decisions/019-public-clients-and-consent.md).
 * Into a public kind the secret is deleted; out of one a new secret is made, shown once; between
 * web and machine it is kept. Tokens already issued stay valid, as when a secret is regenerated:
 * users granted them, not the secret. A changed secret is announced like a regenerated one, so no
 * process keeps authenticating the old one. A single-page app's redirect URIs must be http(s).
 */
export async function changeApplicationKind(
  db: Db,
  bus: RevocationBus,
  target: { id: string; ownerId: string; kind: ApplicationKind },
  now: Date,
  audit: AuditTrail,
): Promise<KindChange> {
  if (!isUuid(target.id)) return undefined
  const result = await db.transaction().execute(async (trx): Promise<(KindChange & { from?: ApplicationKind }) | undefined> => {
    const current = await lockOwnedApplicationRow(trx, target.id, target.ownerId)
    if (!current) return undefined
    if (current.kind === target.kind) return { kind: 'refused', reason: `It is a ${KIND_WORDS[target.kind]} already.` }
    if (target.kind === 'spa' && current.redirect_uris.some((uri) => !/^https?:\/\//i.test(uri))) {
      return { kind: 'refused', reason: "A single-page app's redirect URIs must use https: edit them first." }
    }
    const toPublic = isPublicKind(target.kind)
    const clientSecret = !toPublic && current.secret_hash === null ? generateClientSecret() : null
    const secretHash = toPublic ? null : clientSecret === null ? current.secret_hash : sha256Hex(clientSecret)
    const application = await setOwnedApplicationKind(trx, target.id, target.ownerId, { kind: target.kind, secretHash, now })
    if (!application) return undefined
    if (secretHash !== current.secret_hash) await revoke({ db: trx, bus }, { kind: 'client-changed', clientId: application.client_id }, now)
    return { kind: 'changed', application, clientSecret, from: current.kind }
  })
  if (result?.kind === 'changed') {
    const secret = clientSecret(result.from!, result.application.kind)
    const detail = auditDetail.kindChanged(KIND_WORDS[result.from!], KIND_WORDS[result.application.kind], secret)
    await recordOwnerEvent(audit, 'application.kind_changed', result.application, detail)
    return { kind: 'changed', application: result.application, clientSecret: result.clientSecret }
  }
  return result
}

function clientSecret(from: ApplicationKind, to: ApplicationKind): 'deleted' | 'created' | 'kept' | 'none' {
  if (isPublicKind(from)) return isPublicKind(to) ? 'none' : 'created'
  return isPublicKind(to) ? 'deleted' : 'kept'
}

/**
 * Deletes the application with its grants, codes and tokens (ON DELETE CASCADE), and in the
 * same transaction announces the revocation, so that token caches (here and in resource APIs'
 * verifiers) drop its tokens exactly when the delete commits. The one deletion, for its owner's
 * console (deleteApplication below) and for an operator (src/operator/moderation.ts); each
 * records its own audit event. Undefined when the owner has no such application.
 */
export async function removeApplication(
  db: Db,
  bus: RevocationBus,
  id: string,
  ownerId: string,
  now: Date,
): Promise<{ client_id: string; name: string; revoked: number } | undefined> {
  if (!isUuid(id)) return undefined
  // Locked, then revoked while its tokens can still be listed, then deleted: all in one
  // transaction, so the digests announced are exactly the tokens the delete removes.
  return db.transaction().execute(async (trx) => {
    if (!(await lockOwnedApplication(trx, id, ownerId))) return undefined
    const revoked = await revoke({ db: trx, bus }, { kind: 'application-deleted', applicationId: id }, now)
    const row = await deleteOwnedApplication(trx, id, ownerId)
    return row && { ...row, revoked }
  })
}

/** "Delete application" in the console: removeApplication, recorded on the owner's Security log. */
export async function deleteApplication(
  db: Db,
  bus: RevocationBus,
  id: string,
  ownerId: string,
  now: Date,
  audit: AuditTrail,
): Promise<boolean> {
  const deleted = await removeApplication(db, bus, id, ownerId, now)
  if (!deleted) return false
  await audit.record({
    event: 'application.deleted',
    userId: ownerId,
    application: { clientId: deleted.client_id, name: deleted.name },
    detail: auditDetail.tokensRevoked(deleted.revoked),
  })
  return true
}
