import { sql } from 'kysely'
import type { Db } from '../db/connect.js'

/*
 * The resource identifiers operators declared for their resource servers (RFC 8707 §2,
 * migrations/0025_resource_indicators.ts): read when a request names `resource`, written by the
 * operator's tools (src/operator/resources.ts).
 */

/** A declared identifier with what a request for it needs of its resource server. */
export interface ResourceTargetRow {
  identifier: string
  application_id: string
  name: string
  /** Whether the application is still marked a resource server and not suspended: only then is the identifier accepted. */
  usable: boolean
  resource_token_ttl_seconds: number | null
}

/** The declared identifiers among `identifiers`, with their servers (resource_identifiers_pkey, applications_pkey). */
export async function findResourceTargets(db: Db, identifiers: readonly string[]): Promise<ResourceTargetRow[]> {
  if (identifiers.length === 0) return []
  const { rows } = await sql<ResourceTargetRow>`
    select ri.identifier, a.id as application_id, a.name, a.is_resource_server and a.suspended_at is null as usable,
      a.resource_token_ttl_seconds
    from resource_identifiers ri join applications a on a.id = ri.application_id
    where ri.identifier = any(${[...identifiers]}::text[])`.execute(db)
  return rows
}

/** The application's identifiers, in order (resource_identifiers_application_idx). */
export async function listResourceIdentifiers(db: Db, applicationId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('resource_identifiers')
    .select('identifier')
    .where('application_id', '=', applicationId)
    .orderBy('identifier')
    .execute()
  return rows.map((r) => r.identifier)
}

/** Which of `identifiers` another application declared: each belongs to one application. */
export async function findIdentifiersOfOthers(db: Db, applicationId: string, identifiers: readonly string[]): Promise<string[]> {
  if (identifiers.length === 0) return []
  const rows = await db
    .selectFrom('resource_identifiers')
    .select('identifier')
    .where('identifier', '=', sql<string>`any(${[...identifiers]}::text[])`)
    .where('application_id', '<>', applicationId)
    .execute()
  return rows.map((r) => r.identifier)
}

/**
 * Adds and removes the application's identifiers. An identifier another application holds is
 * not taken from it: the insert does nothing for it, and the caller, having checked first, is
 * told by the count of rows added.
 */
export async function changeResourceIdentifiers(
  db: Db,
  applicationId: string,
  change: { add: readonly string[]; remove: readonly string[]; now: Date },
): Promise<{ added: number }> {
  if (change.remove.length > 0) {
    await db
      .deleteFrom('resource_identifiers')
      .where('application_id', '=', applicationId)
      .where('identifier', '=', sql<string>`any(${[...change.remove]}::text[])`)
      .execute()
  }
  if (change.add.length === 0) return { added: 0 }
  const rows = await db
    .insertInto('resource_identifiers')
    .values(change.add.map((identifier) => ({ identifier, application_id: applicationId, created_at: change.now })))
    .onConflict((oc) => oc.column('identifier').doNothing())
    .returning('identifier')
    .execute()
  return { added: rows.length }
}

/** The lifetime of tokens for the application's identifiers; null: RESOURCE_TOKEN_TTL_SECONDS_DEFAULT. */
export async function setResourceTokenTtl(db: Db, applicationId: string, seconds: number | null): Promise<void> {
  await db.updateTable('applications').set({ resource_token_ttl_seconds: seconds }).where('id', '=', applicationId).execute()
}
