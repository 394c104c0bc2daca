import { type Kysely, sql } from 'kysely'

/*
 * OpenID Connect RP-Initiated Logout 1.0 3: the post-logout redirect URIs an application
 * registers, where /oauth/logout may send the browser after the log-out (an exact match, never a
 * subpath). Empty for every application registered before: it redirects nowhere until its owner
 * registers one.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('applications')
    .addColumn('post_logout_redirect_uris', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('applications').dropColumn('post_logout_redirect_uris').execute()
}
