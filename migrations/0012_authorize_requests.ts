import { type Kysely, sql } from 'kysely'

/*
 * The authorize request of an OpenID Provider (docs/openid-connect.md):
 * - pending_authorizations.response_mode: the response mode of a request held for the consent
 *   page (OAuth 2.0 Multiple Response Type Encoding Practices, Form Post Response Mode), null for
 *   the response type's default (every row held before this migration).
 * - pushed_authorization_requests (RFC 9126): an authorize request a client pushed, validated,
 *   until its single use or its expiry (60 s); only the SHA-256 of the request_uri's random part
 *   is stored. Bounded per application (QUOTAS.pushedPerApplication) and cleared by the janitor.
 * - applications.require_pushed_requests: the owner's "Require pushed authorization requests".
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('pending_authorizations')
    .addColumn('response_mode', 'text', (c) => c.check(sql`response_mode in ('query', 'fragment', 'form_post')`))
    .execute()
  await db.schema
    .createTable('pushed_authorization_requests')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('request_uri_hash', 'text', (c) => c.notNull().unique())
    .addColumn('application_id', 'uuid', (c) => c.notNull().references('applications.id').onDelete('cascade'))
    // JSON text, like audit_events.detail: read back only by Gatehouse.
    .addColumn('params', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('pushed_authorization_requests_application_idx')
    .on('pushed_authorization_requests')
    .columns(['application_id', 'created_at'])
    .execute()
  await db.schema
    .createIndex('pushed_authorization_requests_expires_at_idx')
    .on('pushed_authorization_requests')
    .column('expires_at')
    .execute()
  await db.schema
    .alterTable('applications')
    .addColumn('require_pushed_requests', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('applications').dropColumn('require_pushed_requests').execute()
  await db.schema.dropTable('pushed_authorization_requests').execute()
  await db.schema.alterTable('pending_authorizations').dropColumn('response_mode').execute()
}
