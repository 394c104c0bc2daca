import { type Kysely, sql } from 'kysely'

/*
 * Public clients (RFC 6749 §2.1, §10.1; docs/decisions/019-public-clients-and-consent.md): a
 * native or single-page app has no secret, since whatever it ships can be read by whoever runs
 * it, and every other kind keeps one. The check states the rule where every writer meets it, so
 * no public application can hold a secret and no confidential one can lose its own.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('applications')
    .alterColumn('secret_hash', (c) => c.dropNotNull())
    .execute()
  await db.schema
    .alterTable('applications')
    .addCheckConstraint('applications_public_kinds_have_no_secret', sql`(kind in ('native', 'spa')) = (secret_hash is null)`)
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('applications').dropConstraint('applications_public_kinds_have_no_secret').execute()
  await db.deleteFrom('applications').where('secret_hash', 'is', null).execute()
  await db.schema
    .alterTable('applications')
    .alterColumn('secret_hash', (c) => c.setNotNull())
    .execute()
}
