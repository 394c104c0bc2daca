import type { Db } from '../db/connect.js'
import type { Application, ApplicationKind } from '../db/schema.js'
import { containing } from './like-pattern.js'

/*
 * Applications as the operator sees and moderates them (src/operator/): listing across owners,
 * the flags only an operator sets, and suspension with the owner. The owner's and the OAuth
 * endpoints' statements are in applications.ts.
 */

export interface ApplicationListing {
  id: string
  client_id: string
  name: string
  /** Both null for a client of a metadata document, which nobody owns (migration 0026). */
  owner_id: string | null
  owner_email: string | null
  created_at: Date
  /** When its metadata document was last fetched; null for a registered application. */
  metadata_fetched_at: Date | null
  suspended_at: Date | null
  verified_at: Date | null
  is_resource_server: boolean
  kind: ApplicationKind
  /** The token policy (src/applications/token-policy.ts), for the list's brief. */
  require_dpop: boolean
  access_token_ttl_seconds: number | null
  refresh_token_ttl_seconds: number | null
}

/** Applications whose name, client_id or owner's email contains `query` (all when empty), newest first. */
export function listApplicationsForOperator(
  db: Db,
  options: { query: string; limit: number; offset: number; ownerId?: string; metadataClients?: boolean },
): Promise<ApplicationListing[]> {
  let q = db
    .selectFrom('applications')
    .leftJoin('users', 'users.id', 'applications.owner_id')
    .select([
      'applications.id',
      'applications.client_id',
      'applications.name',
      'applications.owner_id',
      'users.email as owner_email',
      'applications.created_at',
      'applications.suspended_at',
      'applications.verified_at',
      'applications.is_resource_server',
      'applications.kind',
      'applications.require_dpop',
      'applications.access_token_ttl_seconds',
      'applications.refresh_token_ttl_seconds',
      'applications.metadata_fetched_at',
    ])
  if (options.query !== '') {
    const pattern = containing(options.query)
    q = q.where((eb) =>
      eb.or([
        eb('applications.name', 'ilike', pattern),
        eb('applications.client_id', '=', options.query),
        eb('users.email', 'like', containing(options.query.toLowerCase())),
      ]),
    )
  }
  if (options.ownerId !== undefined) q = q.where('applications.owner_id', '=', options.ownerId)
  // Only the clients of metadata documents (applications_metadata_fetched_at_idx).
  if (options.metadataClients === true) q = q.where('applications.metadata_fetched_at', 'is not', null)
  return q.orderBy('applications.created_at', 'desc').orderBy('applications.id').limit(options.limit).offset(options.offset).execute()
}

export type ApplicationWithOwner = Application & { owner_email: string | null }

export function findApplicationForOperator(
  db: Db,
  where: { clientId: string } | { id: string },
): Promise<ApplicationWithOwner | undefined> {
  const q = db
    .selectFrom('applications')
    .leftJoin('users', 'users.id', 'applications.owner_id')
    .selectAll('applications')
    .select('users.email as owner_email')
  return (
    'id' in where ? q.where('applications.id', '=', where.id) : q.where('applications.client_id', '=', where.clientId)
  ).executeTakeFirst()
}

/**
 * Locks the application's row until the transaction ends (FOR UPDATE: no code or token of it
 * can be issued meanwhile, since each takes a key-share lock through its foreign key).
 */
export function lockApplication(db: Db, id: string): Promise<Application | undefined> {
  return db.selectFrom('applications').selectAll().where('id', '=', id).forUpdate().executeTakeFirst()
}

export type ApplicationFlags = Partial<Pick<Application, 'suspended_at' | 'verified_at' | 'is_resource_server'>>

export async function setApplicationFlags(db: Db, id: string, flags: ApplicationFlags): Promise<void> {
  await db.updateTable('applications').set(flags).where('id', '=', id).execute()
}

/** The operator's grant of client credentials (RFC 6749 §4.4): its scopes, or null for off. */
export async function setClientCredentialsScopes(db: Db, id: string, scopes: readonly string[] | null): Promise<void> {
  await db
    .updateTable('applications')
    .set({ client_credentials_scopes: scopes === null ? null : [...scopes] })
    .where('id', '=', id)
    .execute()
}

/** The owner's live applications, suspended at `at` with their owner. */
export async function suspendApplicationsOfOwner(db: Db, ownerId: string, at: Date): Promise<string[]> {
  const rows = await db
    .updateTable('applications')
    .set({ suspended_at: at })
    .where('owner_id', '=', ownerId)
    .where('suspended_at', 'is', null)
    .returning('id')
    .execute()
  return rows.map((r) => r.id)
}

/** The owner's applications suspended together with their owner at `at`, active again. */
export async function unsuspendApplicationsOfOwner(db: Db, ownerId: string, at: Date): Promise<number> {
  const rows = await db
    .updateTable('applications')
    .set({ suspended_at: null })
    .where('owner_id', '=', ownerId)
    .where('suspended_at', '=', at)
    .returning('id')
    .execute()
  return rows.length
}
