import { type Kysely, sql } from 'kysely'

/*
 * OpenID Connect's implicit flow (OpenID Connect Core 3.2): a request held for the
 * consent page may have response_type `id_token` or `id_token token` (always written in that
 * order, src/oauth/authorize/authorize-request.ts). Hybrid types are not offered, so never stored.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('pending_authorizations').dropConstraint('pending_authorizations_response_type').execute()
  await db.schema
    .alterTable('pending_authorizations')
    .addCheckConstraint('pending_authorizations_response_type', sql`response_type in ('code', 'token', 'id_token', 'id_token token')`)
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  // Held requests live ten minutes; the ones the older schema cannot hold are dropped.
  await db.deleteFrom('pending_authorizations').where('response_type', 'in', ['id_token', 'id_token token']).execute()
  await db.schema.alterTable('pending_authorizations').dropConstraint('pending_authorizations_response_type').execute()
  await db.schema
    .alterTable('pending_authorizations')
    .addCheckConstraint('pending_authorizations_response_type', sql`response_type in ('code', 'token')`)
    .execute()
}
