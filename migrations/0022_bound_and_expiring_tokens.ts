import { type Kysely, sql } from 'kysely'

/*
 * Tokens a thief cannot use (docs/decisions/022-bound-and-expiring-tokens.md).
 *
 * - applications.require_dpop: the owner refuses token requests without a DPoP proof (RFC 9449
 *   §5; the client metadata `dpop_bound_access_tokens`, §5.2). Without it a client that sends a
 *   proof still gets a bound token, and one that does not gets the seed's bearer token.
 * - applications.access_token_ttl_seconds / refresh_token_ttl_seconds: the owner's choice of
 *   expiring access tokens with rotating refresh tokens (RFC 6749 §6, RFC 9700 §4.14.2). Both
 *   null, the default, is the seed's token valid until revoked; the check keeps them together.
 * - authorization_codes.dpop_jkt: the key a code is bound to by `dpop_jkt` (RFC 9449 §10).
 * - access_tokens.dpop_jkt / expires_at / refresh_family_id: the key the token is bound to
 *   (`cnf.jkt`, RFC 9449 §6), when it expires, and the refresh-token family that issued it, so
 *   that ending the family ends its access tokens.
 * - refresh_token_families and refresh_tokens: a family is one authorization's chain of
 *   rotating refresh tokens with its absolute lifetime; each refresh token is stored as a digest
 *   and retired when used (docs/decisions/023-refresh-token-grace.md).
 * - dpop_proof_jtis: the replay cache of proofs seen by any process, keyed by a digest of the
 *   key and jti, kept until the proof could no longer be accepted anyway
 *   (docs/decisions/024-dpop-replay-cache.md).
 * - gatehouse_live_tokens_v3: the live tokens with the two columns a verifier needs to judge a
 *   bound or expiring token. _v1 and _v2 keep their columns (docs/decisions/017-live-token-view.md)
 *   and now hold neither bound nor expired tokens: a verifier of an earlier release cannot check
 *   a proof, so it refuses a bound token rather than accept a stolen copy as a bearer token.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('applications')
    .addColumn('require_dpop', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('access_token_ttl_seconds', 'integer')
    .addColumn('refresh_token_ttl_seconds', 'integer')
    .execute()
  await db.schema
    .alterTable('applications')
    .addCheckConstraint(
      'applications_token_lifetimes',
      sql`(access_token_ttl_seconds is null and refresh_token_ttl_seconds is null) or
        (access_token_ttl_seconds is not null and refresh_token_ttl_seconds is not null
         and access_token_ttl_seconds between 60 and 604800 and refresh_token_ttl_seconds between 3600 and 31536000
         and refresh_token_ttl_seconds > access_token_ttl_seconds)`,
    )
    .execute()
  await db.schema.alterTable('authorization_codes').addColumn('dpop_jkt', 'text').execute()

  await db.schema
    .createTable('refresh_token_families')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('application_id', 'uuid', (c) => c.notNull().references('applications.id').onDelete('cascade'))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    // What the authorization granted: a refresh may narrow it, never widen it (RFC 6749 §6).
    .addColumn('scopes', sql`text[]`, (c) => c.notNull())
    // The browser session that approved it, so that ending the session ends the family.
    .addColumn('sid', 'text')
    // RFC 9449 §5: a public client's refresh tokens are bound to the key of the first proof.
    .addColumn('dpop_jkt', 'text')
    // The application's lifetimes when the authorization was made: a later change of the owner's
    // choice applies to new authorizations, as what a scope implies is fixed at the grant
    // (docs/decisions/018-operator-scopes.md).
    .addColumn('access_token_ttl_seconds', 'integer', (c) => c.notNull())
    .addColumn('refresh_token_ttl_seconds', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    // The absolute lifetime: no rotation extends it.
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('revoked_at', 'timestamptz')
    .execute()
  await db.schema
    .createIndex('refresh_token_families_grant_idx')
    .on('refresh_token_families')
    .columns(['user_id', 'application_id'])
    .execute()
  await db.schema.createIndex('refresh_token_families_application_idx').on('refresh_token_families').column('application_id').execute()
  await db.schema.createIndex('refresh_token_families_expires_idx').on('refresh_token_families').column('expires_at').execute()
  await db.schema
    .createIndex('refresh_token_families_sid_idx')
    .on('refresh_token_families')
    .column('sid')
    .where(sql<boolean>`sid is not null and revoked_at is null`)
    .execute()

  await db.schema
    .createTable('refresh_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('family_id', 'uuid', (c) => c.notNull().references('refresh_token_families.id').onDelete('cascade'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    // Set when it was exchanged for its successor; a retired token presented again is reuse.
    .addColumn('retired_at', 'timestamptz')
    .execute()
  await db.schema.createIndex('refresh_tokens_family_idx').on('refresh_tokens').columns(['family_id', 'created_at']).execute()
  await db.schema.createIndex('refresh_tokens_expires_idx').on('refresh_tokens').column('expires_at').execute()

  await db.schema
    .alterTable('access_tokens')
    .addColumn('dpop_jkt', 'text')
    .addColumn('expires_at', 'timestamptz')
    .addColumn('refresh_family_id', 'uuid', (c) => c.references('refresh_token_families.id').onDelete('cascade'))
    .execute()
  await db.schema
    .createIndex('access_tokens_refresh_family_idx')
    .on('access_tokens')
    .column('refresh_family_id')
    .where(sql<boolean>`refresh_family_id is not null`)
    .execute()
  await db.schema
    .createIndex('access_tokens_expires_idx')
    .on('access_tokens')
    .column('expires_at')
    .where(sql<boolean>`expires_at is not null`)
    .execute()

  await db.schema
    .createTable('dpop_proof_jtis')
    .addColumn('key_hash', 'text', (c) => c.primaryKey())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('dpop_proof_jtis_expires_idx').on('dpop_proof_jtis').column('expires_at').execute()

  await db.schema
    .createView('gatehouse_live_tokens_v3')
    .as(
      db
        .selectFrom('access_tokens as t')
        .innerJoin('applications as a', 'a.id', 't.application_id')
        .leftJoin('users as u', 'u.id', 't.user_id')
        .select([
          't.token_hash',
          't.user_id',
          't.application_id',
          't.scopes',
          't.created_at',
          'a.client_id',
          'u.email',
          't.dpop_jkt',
          't.expires_at',
        ])
        .where('t.revoked_at', 'is', null),
    )
    .execute()
  await restrictEarlierViews(db, sql`and t.dpop_jkt is null and (t.expires_at is null or t.expires_at > now())`)
}

/** _v1 and _v2 as migrations 0017 and 0021 made them, with `extra` added to their condition. */
async function restrictEarlierViews(db: Kysely<any>, extra: ReturnType<typeof sql>): Promise<void> {
  await sql`create or replace view gatehouse_live_tokens_v1 as
    select t.token_hash, t.user_id, t.application_id, t.scopes, t.created_at, a.client_id, u.email
    from access_tokens t join applications a on a.id = t.application_id join users u on u.id = t.user_id
    where t.revoked_at is null ${extra}`.execute(db)
  await sql`create or replace view gatehouse_live_tokens_v2 as
    select t.token_hash, t.user_id, t.application_id, t.scopes, t.created_at, a.client_id, u.email
    from access_tokens t join applications a on a.id = t.application_id left join users u on u.id = t.user_id
    where t.revoked_at is null ${extra}`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await restrictEarlierViews(db, sql``)
  await db.schema.dropView('gatehouse_live_tokens_v3').execute()
  await db.schema.dropTable('dpop_proof_jtis').execute()
  await db
    .deleteFrom('access_tokens')
    .where((eb) => eb.or([eb('expires_at', 'is not', null), eb('dpop_jkt', 'is not', null)]))
    .execute()
  await db.schema.alterTable('access_tokens').dropColumn('refresh_family_id').dropColumn('expires_at').dropColumn('dpop_jkt').execute()
  await db.schema.dropTable('refresh_tokens').execute()
  await db.schema.dropTable('refresh_token_families').execute()
  await db.schema.alterTable('authorization_codes').dropColumn('dpop_jkt').execute()
  await db.schema.alterTable('applications').dropConstraint('applications_token_lifetimes').execute()
  await db.schema
    .alterTable('applications')
    .dropColumn('refresh_token_ttl_seconds')
    .dropColumn('access_token_ttl_seconds')
    .dropColumn('require_dpop')
    .execute()
}
