import { sql } from 'kysely'
import type { Db } from '../db/connect.js'
import type { Grant } from '../db/schema.js'

/**
 * Records consent; scopes accumulate, so consenting to less never narrows an earlier grant. So do
 * the resources the consent covered (RFC 8707, docs/decisions/025-audiences.md): null, consent to
 * a request that named none, is consent for every API and stays so; otherwise the union.
 */
export async function upsertGrant(
  db: Db,
  g: { userId: string; applicationId: string; scopes: string[]; resources: string[] | null; now: Date },
): Promise<void> {
  await db
    .insertInto('grants')
    .values({
      user_id: g.userId,
      application_id: g.applicationId,
      scopes: g.scopes,
      resources: g.resources,
      created_at: g.now,
      updated_at: g.now,
    })
    .onConflict((oc) =>
      oc.constraint('grants_user_application_key').doUpdateSet({
        scopes: sql<string[]>`array(select distinct s from unnest(grants.scopes || excluded.scopes) as s order by s)`,
        resources: sql<string[] | null>`case when grants.resources is null or excluded.resources is null then null
          else array(select distinct r from unnest(grants.resources || excluded.resources) as r order by r) end`,
        updated_at: (eb) => eb.ref('excluded.updated_at'),
      }),
    )
    .execute()
}

export interface GrantListing {
  id: string
  application_id: string
  application_name: string
  /** Null for a client of a metadata document, which has no owner: its document URL is in client_id. */
  owner_email: string | null
  client_id: string
  /** Set for a client of a metadata document (migration 0026). */
  metadata_fetched_at: Date | null
  scopes: string[]
  created_at: Date
  updated_at: Date
  /**
   * The user's live refresh-token families of this application (docs/expiring-tokens.md): the
   * shortest access-token lifetime among them and the latest absolute end; null when none, as
   * for every grant whose tokens are valid until revoked.
   */
  refresh_access_ttl_seconds: number | null
  refresh_until: Date | null
}

/**
 * The "Authorized Applications" list, newest consent first, in one statement: the live
 * families (not revoked, not past their absolute end at `now`) are grouped per application and
 * joined, rather than read per row.
 */
export function listGrantsForUser(db: Db, userId: string, now: Date): Promise<GrantListing[]> {
  return db
    .selectFrom('grants')
    .innerJoin('applications', 'applications.id', 'grants.application_id')
    .leftJoin('users as owners', 'owners.id', 'applications.owner_id')
    .leftJoin(
      (eb) =>
        eb
          .selectFrom('refresh_token_families')
          .select((f) => ['application_id', f.fn.min('access_token_ttl_seconds').as('access_ttl'), f.fn.max('expires_at').as('until')])
          .where('user_id', '=', userId)
          .where('revoked_at', 'is', null)
          .where('expires_at', '>', now)
          .groupBy('application_id')
          .as('families'),
      (join) => join.onRef('families.application_id', '=', 'grants.application_id'),
    )
    .select((eb) => [
      eb.ref('families.access_ttl').$castTo<number | null>().as('refresh_access_ttl_seconds'),
      eb.ref('families.until').$castTo<Date | null>().as('refresh_until'),
    ])
    .select([
      'grants.id',
      'grants.application_id',
      'applications.name as application_name',
      'applications.client_id',
      'applications.metadata_fetched_at',
      'owners.email as owner_email',
      'grants.scopes',
      'grants.created_at',
      'grants.updated_at',
    ])
    .where('grants.user_id', '=', userId)
    .orderBy('grants.updated_at', 'desc')
    .execute()
}

/** The user's grant, with the application's client_id and name (what the audit log records of it). */
export function findGrantOfUser(
  db: Db,
  grantId: string,
  userId: string,
): Promise<(Grant & { client_id: string; application_name: string }) | undefined> {
  return db
    .selectFrom('grants')
    .innerJoin('applications', 'applications.id', 'grants.application_id')
    .selectAll('grants')
    .select(['applications.client_id', 'applications.name as application_name'])
    .where('grants.id', '=', grantId)
    .where('grants.user_id', '=', userId)
    .executeTakeFirst()
}

export async function deleteGrant(db: Db, userId: string, applicationId: string): Promise<void> {
  await db.deleteFrom('grants').where('user_id', '=', userId).where('application_id', '=', applicationId).execute()
}

/** Every grant of the user, whatever the application: the account was claimed (src/revocation/revoke.ts). */
export async function deleteGrantsOfUser(db: Db, userId: string): Promise<void> {
  await db.deleteFrom('grants').where('user_id', '=', userId).execute()
}

/** Whether the user has consented to the application at all (grants_user_application_key). */
export async function hasGrant(db: Db, userId: string, applicationId: string): Promise<boolean> {
  const row = await db
    .selectFrom('grants')
    .select('id')
    .where('user_id', '=', userId)
    .where('application_id', '=', applicationId)
    .executeTakeFirst()
  return row !== undefined
}
