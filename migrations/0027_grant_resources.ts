import { type Kysely, sql } from 'kysely'

/*
 * What a grant's consent covered (RFC 8707, docs/decisions/025-audiences.md "Consent covers
 * audiences"): grants.resources holds the resource identifiers the user approved, sorted and
 * distinct; null is consent to a request that named none, a token for every API. Remembered
 * consent issues a code without the page only for a request within them, so approving one API
 * is never consent to all. Grants recorded before this migration keep null: nothing says which
 * APIs their consent named, and they go on as they did.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('grants')
    .addColumn('resources', sql`text[]`)
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('grants').dropColumn('resources').execute()
}
