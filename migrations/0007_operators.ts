import type { Kysely } from 'kysely'

/*
 * The operator (docs/operating/admin.md): who may moderate, and what moderation records.
 * - users.is_operator: set only by `gatehouse admin add`; nothing on the web can set it.
 * - users.suspended_at, applications.suspended_at: a suspension, kept as a time so that the
 *   admin pages can say since when; null means active.
 * - applications.verified_at: an operator vouched for the application (its consent page says
 *   so, and its error responses are redirected, docs/decisions/005-trusted-redirects.md).
 * - applications.is_resource_server: may introspect any token and subscribe to the revocation
 *   stream (docs/resource-apis.md).
 * - applications.homepage_url, privacy_policy_url: https links shown on the consent page.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('users')
    .addColumn('is_operator', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('suspended_at', 'timestamptz')
    .execute()
  await db.schema
    .alterTable('applications')
    .addColumn('suspended_at', 'timestamptz')
    .addColumn('verified_at', 'timestamptz')
    .addColumn('is_resource_server', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('homepage_url', 'text')
    .addColumn('privacy_policy_url', 'text')
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('applications')
    .dropColumn('suspended_at')
    .dropColumn('verified_at')
    .dropColumn('is_resource_server')
    .dropColumn('homepage_url')
    .dropColumn('privacy_policy_url')
    .execute()
  await db.schema.alterTable('users').dropColumn('is_operator').dropColumn('suspended_at').execute()
}
