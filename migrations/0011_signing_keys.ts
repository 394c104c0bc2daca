import { type Kysely, sql } from 'kysely'

/*
 * Gatehouse as an OpenID Provider (docs/decisions/014-signing-keys.md).
 * - signing_keys: the ID Token signing keys. The public JWK is published in the JWKS from
 *   not_before on (before the key signs anything, so relying parties' cached key sets already
 *   hold it); the private JWK is sealed with AES-256-GCM (src/lib/sealed-box.ts) under SECRET_KEY
 *   or the key file. retired_at: when the next key took over signing; not_after: when the last
 *   ID Token it signed has expired, after which it leaves the JWKS and the janitor deletes it.
 * - users.display_name (OpenID Connect `name`, optional) and users.profile_updated_at (`updated_at`).
 * - authorization_codes: what the ID Token of the code's exchange states, taken when the code is
 *   issued: nonce, auth_time, amr and sid (a digest of the session's digest, never the cookie);
 *   pending_authorizations.nonce: the nonce of a request held for the consent page.
 * - applications.id_token_alg: the application's ID Token signing algorithm (RS256 by default).
 * Existing applications may request the identity scopes, as new ones may; their owners can
 * uncheck them in the console.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('signing_keys')
    .addColumn('kid', 'text', (c) => c.primaryKey())
    .addColumn('alg', 'text', (c) => c.notNull())
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('private_jwk_sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('not_before', 'timestamptz', (c) => c.notNull())
    .addColumn('retired_at', 'timestamptz')
    .addColumn('not_after', 'timestamptz')
    .addCheckConstraint('signing_keys_alg', sql`alg in ('RS256', 'ES256', 'EdDSA')`)
    .execute()
  await db.schema.createIndex('signing_keys_not_after_idx').on('signing_keys').column('not_after').execute()

  await db.schema.alterTable('users').addColumn('display_name', 'text').addColumn('profile_updated_at', 'timestamptz').execute()
  await sql`update users set profile_updated_at = created_at`.execute(db)
  await db.schema
    .alterTable('users')
    .alterColumn('profile_updated_at', (c) => c.setNotNull())
    .alterColumn('profile_updated_at', (c) => c.setDefault(sql`now()`))
    .execute()

  await db.schema.alterTable('pending_authorizations').addColumn('nonce', 'text').execute()
  await db.schema
    .alterTable('authorization_codes')
    .addColumn('nonce', 'text')
    .addColumn('auth_time', 'timestamptz')
    .addColumn('amr', sql`text[]`)
    .addColumn('sid', 'text')
    .execute()

  await db.schema
    .alterTable('applications')
    .addColumn('id_token_alg', 'text', (c) => c.notNull().defaultTo('RS256'))
    .execute()
  await db.schema
    .alterTable('applications')
    .addCheckConstraint('applications_id_token_alg', sql`id_token_alg in ('RS256', 'ES256', 'EdDSA')`)
    .execute()
  await sql`update applications set allowed_scopes = allowed_scopes || array['openid', 'email', 'profile']::text[]
    where not allowed_scopes && array['openid', 'email', 'profile']::text[]`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`update applications set allowed_scopes = array(
    select s from unnest(allowed_scopes) as s where s not in ('openid', 'email', 'profile'))`.execute(db)
  await db.schema.alterTable('applications').dropConstraint('applications_id_token_alg').execute()
  await db.schema.alterTable('applications').dropColumn('id_token_alg').execute()
  await db.schema
    .alterTable('authorization_codes')
    .dropColumn('nonce')
    .dropColumn('auth_time')
    .dropColumn('amr')
    .dropColumn('sid')
    .execute()
  await db.schema.alterTable('pending_authorizations').dropColumn('nonce').execute()
  await db.schema.alterTable('users').dropColumn('display_name').dropColumn('profile_updated_at').execute()
  await db.schema.dropTable('signing_keys').execute()
}
