import { type Kysely, sql } from 'kysely'

/*
 * Accounts people can trust and recover (docs/accounts.md).
 * - users.email_verified_at: when the address was proven by a link sent to it; null until then.
 *   An unverified user may log in and consent, but not register applications. Accounts that
 *   exist when this migration runs count as verified, stamped with the migration's time: they
 *   were made before verification existed, and their owners must not lose their applications.
 * - sessions.user_agent, ip, last_seen_at: what "Active sessions" shows. last_seen_at is written
 *   at log-in and then at most every five minutes per session (src/accounts/sessions/sessions.ts), never on
 *   every request.
 * - email_tokens: the single-use links mailed for verification, password reset and email
 *   change, stored as SHA-256 digests like every secret; `email` is the address the link was
 *   sent to, which must still be the account's (or, for a change, still free) when it is used.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').addColumn('email_verified_at', 'timestamptz').execute()
  await sql`update users set email_verified_at = now()`.execute(db)

  await db.schema
    .alterTable('sessions')
    .addColumn('user_agent', 'text')
    .addColumn('ip', 'text')
    .addColumn('last_seen_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await sql`update sessions set last_seen_at = created_at`.execute(db)

  await db.schema
    .createTable('email_tokens')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .addCheckConstraint('email_tokens_purpose', sql`purpose in ('verify-email', 'reset-password', 'change-email')`)
    .execute()
  await db.schema.createIndex('email_tokens_user_id_idx').on('email_tokens').column('user_id').execute()
  // The janitor deletes expired links by this (src/limits/janitor.ts).
  await db.schema.createIndex('email_tokens_expires_at_idx').on('email_tokens').column('expires_at').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('email_tokens').execute()
  await db.schema.alterTable('sessions').dropColumn('user_agent').dropColumn('ip').dropColumn('last_seen_at').execute()
  await db.schema.alterTable('users').dropColumn('email_verified_at').execute()
}
