import { sql } from 'kysely'
import type { Db } from '../db/connect.js'
import type { Application, ApplicationKind, SigningAlg } from '../db/schema.js'

/*
 * Applications (client registrations). Shared by the OAuth endpoints and the console; keep
 * additions additive.
 */

/** By public client_id (applications_client_id_key). */
export function findApplicationByClientId(db: Db, clientId: string): Promise<Application | undefined> {
  return db.selectFrom('applications').selectAll().where('client_id', '=', clientId).executeTakeFirst()
}

/** By id (the primary key). */
export function findApplicationById(db: Db, id: string): Promise<Application | undefined> {
  return db.selectFrom('applications').selectAll().where('id', '=', id).executeTakeFirst()
}

/** The application with its owner's email, for the consent page; a metadata document's client has no owner (null, false). */
export function findApplicationWithOwnerByClientId(
  db: Db,
  clientId: string,
): Promise<(Application & { owner_email: string | null; owner_email_verified: boolean }) | undefined> {
  return db
    .selectFrom('applications')
    .leftJoin('users', 'users.id', 'applications.owner_id')
    .selectAll('applications')
    .select('users.email as owner_email')
    .select(sql<boolean>`users.email_verified_at is not null`.as('owner_email_verified'))
    .where('applications.client_id', '=', clientId)
    .executeTakeFirst()
}

/**
 * The redirect URIs of every active single-page app: their origins are the CORS allow-list of
 * the token and revocation endpoints (src/oauth/clients/application-cache.ts). Read on a
 * cross-origin request at most once per cache lifetime, never on a server-side client's path.
 */
export async function listSpaRedirectUris(db: Db): Promise<string[]> {
  const rows = await db
    .selectFrom('applications')
    .select('redirect_uris')
    .where('kind', '=', 'spa')
    .where('suspended_at', 'is', null)
    .execute()
  return rows.flatMap((r) => r.redirect_uris)
}

/* Console: every query below is scoped to the owner, so another user's application is simply not found. */

export type ApplicationSummary = Pick<Application, 'id' | 'name' | 'client_id' | 'created_at'>

/** The owner's applications, newest first (applications_owner_id_idx). */
export function listApplicationsByOwner(db: Db, ownerId: string): Promise<ApplicationSummary[]> {
  return db
    .selectFrom('applications')
    .select(['id', 'name', 'client_id', 'created_at'])
    .where('owner_id', '=', ownerId)
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .execute()
}

/**
 * Whether the application and the user are both active, holding both rows (FOR KEY SHARE) until
 * the transaction ends: a suspension of either, which locks its row FOR UPDATE while it revokes,
 * then waits for what is issued here, or is waited for and seen (the row is re-read once it
 * commits, and a suspended one no longer qualifies). One statement, as for the application alone.
 */
export async function lockActiveApplicationAndUser(db: Db, id: string, userId: string): Promise<boolean> {
  const row = await db
    .selectFrom('applications')
    .innerJoin('users', (join) => join.on('users.id', '=', userId))
    .select('applications.id')
    .where('applications.id', '=', id)
    .where('applications.suspended_at', 'is', null)
    .where('users.suspended_at', 'is', null)
    .forKeyShare()
    .executeTakeFirst()
  return row !== undefined
}

/** How many applications the owner has (applications_owner_id_idx). */
export async function countApplicationsByOwner(db: Db, ownerId: string): Promise<number> {
  const row = await db
    .selectFrom('applications')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('owner_id', '=', ownerId)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/** By primary key and owner; undefined for an unknown id or someone else's application. */
export function findOwnedApplication(db: Db, id: string, ownerId: string): Promise<Application | undefined> {
  return db.selectFrom('applications').selectAll().where('id', '=', id).where('owner_id', '=', ownerId).executeTakeFirst()
}

export interface ApplicationSettings {
  /** Set at registration; an edit leaves it as it is (absent: web). */
  kind?: ApplicationKind
  name: string
  description: string
  redirectUris: string[]
  /** RP-Initiated Logout 1.0 3; absent: none for a new application, unchanged by an edit. */
  postLogoutRedirectUris?: string[]
  allowedScopes: string[]
  requirePkce: boolean
  allowImplicit: boolean
  /** How its ID Tokens are signed (OpenID Connect Core 15.1: RS256 unless chosen otherwise). */
  idTokenAlg: SigningAlg
  /** RFC 9126 6: plain authorize requests refused; absent: false for a new application, unchanged by an edit. */
  requirePushedRequests?: boolean
  /** RFC 8628: the device flow; absent: false for a new application, unchanged by an edit. */
  allowDeviceFlow?: boolean
  /** https links shown on the consent page; absent or null: none. */
  homepageUrl?: string | null
  privacyPolicyUrl?: string | null
}

export function insertApplication(
  db: Db,
  a: ApplicationSettings & { clientId: string; secretHash: string | null; ownerId: string; now: Date },
): Promise<Application> {
  return db
    .insertInto('applications')
    .values({
      kind: a.kind ?? 'web',
      client_id: a.clientId,
      secret_hash: a.secretHash,
      owner_id: a.ownerId,
      name: a.name,
      description: a.description,
      redirect_uris: a.redirectUris,
      post_logout_redirect_uris: a.postLogoutRedirectUris ?? [],
      allowed_scopes: a.allowedScopes,
      require_pkce: a.requirePkce,
      allow_implicit: a.allowImplicit,
      id_token_alg: a.idTokenAlg,
      require_pushed_requests: a.requirePushedRequests ?? false,
      allow_device_flow: a.allowDeviceFlow ?? false,
      homepage_url: a.homepageUrl ?? null,
      privacy_policy_url: a.privacyPolicyUrl ?? null,
      created_at: a.now,
      updated_at: a.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow()
}

/** Sets the kind and the secret digest together, as migration 0019's check requires (null exactly for the public kinds). */
export function setOwnedApplicationKind(
  db: Db,
  id: string,
  ownerId: string,
  change: { kind: ApplicationKind; secretHash: string | null; now: Date },
): Promise<Application | undefined> {
  return db
    .updateTable('applications')
    .set({ kind: change.kind, secret_hash: change.secretHash, updated_at: change.now })
    .where('id', '=', id)
    .where('owner_id', '=', ownerId)
    .returningAll()
    .executeTakeFirst()
}

/** The token policy's three columns (src/applications/token-policy.ts); migration 0022's check keeps the lifetimes together. */
export function setOwnedApplicationTokenPolicy(
  db: Db,
  id: string,
  ownerId: string,
  change: { requireDpop: boolean; accessTokenTtlSeconds: number | null; refreshTokenTtlSeconds: number | null; now: Date },
): Promise<Application | undefined> {
  return db
    .updateTable('applications')
    .set({
      require_dpop: change.requireDpop,
      access_token_ttl_seconds: change.accessTokenTtlSeconds,
      refresh_token_ttl_seconds: change.refreshTokenTtlSeconds,
      updated_at: change.now,
    })
    .where('id', '=', id)
    .where('owner_id', '=', ownerId)
    .returningAll()
    .executeTakeFirst()
}

/** The owner's application, its row locked until the transaction ends (an edit and an operator's verification do not interleave). */
export function lockOwnedApplicationRow(trx: Db, id: string, ownerId: string): Promise<Application | undefined> {
  return trx.selectFrom('applications').selectAll().where('id', '=', id).where('owner_id', '=', ownerId).forUpdate().executeTakeFirst()
}

export function updateOwnedApplication(
  db: Db,
  id: string,
  ownerId: string,
  s: ApplicationSettings,
  now: Date,
  options: { clearVerification?: boolean } = {},
): Promise<Application | undefined> {
  return db
    .updateTable('applications')
    .set({
      ...(options.clearVerification ? { verified_at: null } : {}),
      name: s.name,
      description: s.description,
      redirect_uris: s.redirectUris,
      ...(s.postLogoutRedirectUris === undefined ? {} : { post_logout_redirect_uris: s.postLogoutRedirectUris }),
      allowed_scopes: s.allowedScopes,
      require_pkce: s.requirePkce,
      allow_implicit: s.allowImplicit,
      id_token_alg: s.idTokenAlg,
      ...(s.requirePushedRequests === undefined ? {} : { require_pushed_requests: s.requirePushedRequests }),
      ...(s.allowDeviceFlow === undefined ? {} : { allow_device_flow: s.allowDeviceFlow }),
      homepage_url: s.homepageUrl ?? null,
      privacy_policy_url: s.privacyPolicyUrl ?? null,
      updated_at: now,
    })
    .where('id', '=', id)
    .where('owner_id', '=', ownerId)
    .returningAll()
    .executeTakeFirst()
}

/** Replaces the secret digest: the previous secret fails from the moment this commits. A public application has none to replace (migration 0019). */
export function replaceOwnedApplicationSecret(
  db: Db,
  id: string,
  ownerId: string,
  secretHash: string,
  now: Date,
): Promise<Application | undefined> {
  return db
    .updateTable('applications')
    .set({ secret_hash: secretHash, updated_at: now })
    .where('id', '=', id)
    .where('owner_id', '=', ownerId)
    .where('secret_hash', 'is not', null)
    .returningAll()
    .executeTakeFirst()
}

/**
 * Locks the owner's application row until the end of `trx`, or answers false when there is
 * none. Inserting a code or token takes a key-share lock on the row (its foreign key), so once
 * this returns no token of the application can appear until the transaction ends.
 */
export async function lockOwnedApplication(trx: Db, id: string, ownerId: string): Promise<boolean> {
  const row = await trx
    .selectFrom('applications')
    .select('id')
    .where('id', '=', id)
    .where('owner_id', '=', ownerId)
    .forUpdate()
    .executeTakeFirst()
  return row !== undefined
}

/**
 * Deletes the application; its grants, codes and tokens go with it (ON DELETE CASCADE). Answers
 * what it was called, or undefined when there was no such application of this owner.
 */
export function deleteOwnedApplication(db: Db, id: string, ownerId: string): Promise<Pick<Application, 'client_id' | 'name'> | undefined> {
  return db
    .deleteFrom('applications')
    .where('id', '=', id)
    .where('owner_id', '=', ownerId)
    .returning(['client_id', 'name'])
    .executeTakeFirst()
}

/** Locks every application of the owner until the end of `trx` and returns their ids (applications_owner_id_idx). */
export async function lockApplicationsOfOwner(trx: Db, ownerId: string): Promise<string[]> {
  const rows = await trx.selectFrom('applications').select('id').where('owner_id', '=', ownerId).orderBy('id').forUpdate().execute()
  return rows.map((r) => r.id)
}
