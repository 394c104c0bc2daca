import { type Kysely, sql } from 'kysely'

/*
 * Clients that identify with a Client ID Metadata Document (docs/decisions/026-client-metadata-documents.md):
 * an applications row like any other, so grants, tokens, revocation, "Authorized applications",
 * suspension and the janitor work for them unchanged, but with no owner. `metadata_fetched_at`
 * marks such a row and says when its document was last read; the check ties the two, so a row
 * without an owner is always one of these, and one of these is always a public client.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('applications')
    .alterColumn('owner_id', (c) => c.dropNotNull())
    .execute()
  await db.schema.alterTable('applications').addColumn('metadata_fetched_at', 'timestamptz').execute()
  await db.schema
    .alterTable('applications')
    .addCheckConstraint(
      'applications_metadata_clients_have_no_owner',
      sql`(owner_id is null) = (metadata_fetched_at is not null) and (metadata_fetched_at is null or kind = 'native')`,
    )
    .execute()
  // The operator's count and list, the bound on their number and the janitor's sweep.
  await db.schema
    .createIndex('applications_metadata_fetched_at_idx')
    .on('applications')
    .column('metadata_fetched_at')
    .where(sql.ref('metadata_fetched_at'), 'is not', null)
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('applications_metadata_fetched_at_idx').execute()
  await db.deleteFrom('applications').where('owner_id', 'is', null).execute()
  await db.schema.alterTable('applications').dropConstraint('applications_metadata_clients_have_no_owner').execute()
  await db.schema.alterTable('applications').dropColumn('metadata_fetched_at').execute()
  await db.schema
    .alterTable('applications')
    .alterColumn('owner_id', (c) => c.setNotNull())
    .execute()
}
