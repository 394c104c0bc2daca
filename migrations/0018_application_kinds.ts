import { type Kysely, sql } from 'kysely'

/*
 * Kinds of application (docs/applications.md "Which kind of application?"): a web application
 * keeps a secret on its server (RFC 6749 §2.1 confidential, every application before this
 * migration, and the default); a native or single-page app cannot keep one (public); a machine
 * acts for no user (RFC 6749 §4.4). The kind decides which credentials and grants an application
 * has, so it is a column every check reads, not something derived from other settings.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('applications')
    .addColumn('kind', 'text', (c) =>
      c
        .notNull()
        .defaultTo('web')
        .check(sql`kind in ('web', 'native', 'spa', 'machine')`),
    )
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('applications').dropColumn('kind').execute()
}
