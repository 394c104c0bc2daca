import { type Kysely, sql } from 'kysely'

/*
 * A second factor and re-authentication (docs/decisions/011-second-factor.md).
 * - sessions.amr: the authentication methods the session's log-in used (RFC 8176 values: pwd,
 *   otp, hwk, mfa), which tokens and ID Tokens state; authenticated_at: when that log-in
 *   happened (OpenID Connect auth_time); reauthenticated_at: the last password or factor
 *   confirmation after it ("sudo mode", REAUTH_WINDOW).
 * - users.second_factor: whether the account has a confirmed TOTP secret or a passkey, kept in
 *   the same transaction as every change to those (src/repositories/second-factor.ts), so the
 *   session read that every page makes needs no extra join.
 * - totp_enrolments: a secret shown to the user and not yet confirmed with a code; expires.
 * - totp_secrets: the confirmed secret, sealed with AES-256-GCM (src/lib/sealed-box.ts), and
 *   the last time step accepted, so a code is accepted once (RFC 6238 5.2).
 * - recovery_codes: ten per account, by digest; a used code is deleted.
 * - passkeys: WebAuthn credentials (public keys), several per account.
 * - webauthn_challenges: a challenge handed to the browser, by the digest of the cookie or
 *   pending log-in that holds it; expires.
 * - pending_logins: the password step passed, the second factor not yet: a short-lived row named
 *   by the digest of a cookie, with the failures counted against it.
 * Tables that only grow with accounts (totp_secrets, recovery_codes, passkeys) are bounded per
 * account and deleted with it; the others expire and the janitor deletes them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('sessions')
    .addColumn('amr', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{pwd}'`))
    .addColumn('authenticated_at', 'timestamptz')
    .addColumn('reauthenticated_at', 'timestamptz')
    .execute()
  await sql`update sessions set authenticated_at = created_at`.execute(db)
  await db.schema
    .alterTable('sessions')
    .alterColumn('authenticated_at', (c) => c.setNotNull())
    .alterColumn('authenticated_at', (c) => c.setDefault(sql`now()`))
    .execute()
  await db.schema
    .alterTable('users')
    .addColumn('second_factor', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute()

  await db.schema
    .createTable('totp_enrolments')
    .addColumn('user_id', 'uuid', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('totp_enrolments_expires_at_idx').on('totp_enrolments').column('expires_at').execute()

  await db.schema
    .createTable('totp_secrets')
    .addColumn('user_id', 'uuid', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('last_step', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('recovery_codes')
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('code_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('recovery_codes_pkey', ['user_id', 'code_hash'])
    .execute()

  await db.schema
    .createTable('passkeys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('public_key', 'bytea', (c) => c.notNull())
    .addColumn('counter', 'bigint', (c) => c.notNull())
    .addColumn('transports', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('backed_up', 'boolean', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('last_used_at', 'timestamptz')
    .execute()
  await db.schema.createIndex('passkeys_user_id_idx').on('passkeys').column('user_id').execute()

  await db.schema
    .createTable('webauthn_challenges')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'uuid', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('challenge', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addCheckConstraint('webauthn_challenges_purpose', sql`purpose in ('register', 'authenticate')`)
    .execute()
  await db.schema.createIndex('webauthn_challenges_expires_at_idx').on('webauthn_challenges').column('expires_at').execute()

  await db.schema
    .createTable('pending_logins')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema.createIndex('pending_logins_expires_at_idx').on('pending_logins').column('expires_at').execute()
  await db.schema.createIndex('pending_logins_user_id_idx').on('pending_logins').column('user_id').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['pending_logins', 'webauthn_challenges', 'passkeys', 'recovery_codes', 'totp_secrets', 'totp_enrolments']) {
    await db.schema.dropTable(table).execute()
  }
  await db.schema.alterTable('users').dropColumn('second_factor').execute()
  await db.schema.alterTable('sessions').dropColumn('reauthenticated_at').dropColumn('authenticated_at').dropColumn('amr').execute()
}
