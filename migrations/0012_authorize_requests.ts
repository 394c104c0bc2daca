import { type Kysely, sql } from 'kysely'

/*
 * The authorize request of an OpenID Provider (issue 24):
 * - pending_authorizations.response_mode: the response mode of a request held for the consent
 *   page (OAuth 2.0 Multiple Response Type Encoding Practices, Form Post Response Mode), null for
 *   the response type's default (every row held before this migration).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('pending_authorizations')
    .addColumn('response_mode', 'text', (c) => c.check(sql`response_mode in ('query', 'fragment', 'form_post')`))
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('pending_authorizations').dropColumn('response_mode').execute()
}
