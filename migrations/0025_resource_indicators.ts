import { type Kysely, sql } from 'kysely'

/*
 * Resource indicators (RFC 8707, docs/decisions/025-audiences.md).
 *
 * - resource_identifiers: the absolute URLs (RFC 8707 §2) an operator declared for a resource
 *   server application. One identifier names one API, so it belongs to one application: the
 *   primary key says so. Deleting the application deletes them.
 * - applications.resource_token_ttl_seconds: the lifetime of a token minted for this resource
 *   server's identifiers when the client application chose no lifetime of its own; null is the
 *   default of the setting RESOURCE_TOKEN_TTL_SECONDS_DEFAULT.
 * - access_tokens.audience: the resource identifiers a token is for, sorted and distinct; null is
 *   a token without an audience, exactly as before.
 * - resources on authorization_codes, pending_authorizations, device_authorizations and
 *   refresh_token_families: what a held request asked for and an authorization granted, so
 *   that the token request may narrow it and never widen it (RFC 8707 §2.2). A pushed request
 *   keeps its validated parameters as JSON (pushed_authorization_requests.params), `resource`
 *   among them: it needs no column.
 * - gatehouse_live_tokens_v4: the columns of _v3 in the same order, then `audience`. _v1, _v2
 *   and _v3 keep their columns (docs/decisions/017-live-token-view.md) and now hold no token with
 *   an audience: a verifier of an earlier release cannot check one, so it refuses such a token
 *   rather than accept a token minted for another API.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('resource_identifiers')
    .addColumn('identifier', 'text', (c) => c.primaryKey())
    .addColumn('application_id', 'uuid', (c) => c.notNull().references('applications.id').onDelete('cascade'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('resource_identifiers_application_idx').on('resource_identifiers').column('application_id').execute()

  await db.schema.alterTable('applications').addColumn('resource_token_ttl_seconds', 'integer').execute()
  await db.schema
    .alterTable('applications')
    .addCheckConstraint('applications_resource_token_ttl', sql`resource_token_ttl_seconds is null or resource_token_ttl_seconds > 0`)
    .execute()

  await db.schema
    .alterTable('access_tokens')
    .addColumn('audience', sql`text[]`)
    .execute()
  for (const table of ['authorization_codes', 'pending_authorizations', 'device_authorizations', 'refresh_token_families']) {
    await db.schema
      .alterTable(table)
      .addColumn('resources', sql`text[]`)
      .execute()
  }

  await sql`create view gatehouse_live_tokens_v4 as
    select t.token_hash, t.user_id, t.application_id, t.scopes, t.created_at, a.client_id, u.email,
      t.dpop_jkt, t.expires_at, t.audience
    from access_tokens t join applications a on a.id = t.application_id left join users u on u.id = t.user_id
    where t.revoked_at is null`.execute(db)
  await restrictEarlierViews(db, sql`and t.audience is null`)
}

/**
 * _v1 and _v2 as migration 0022 left them and _v3 as it made it, with `extra` added to their
 * condition. create or replace keeps their columns, which a view's replacement may not change.
 */
async function restrictEarlierViews(db: Kysely<any>, extra: ReturnType<typeof sql>): Promise<void> {
  const earlier = sql`and t.dpop_jkt is null and (t.expires_at is null or t.expires_at > now())`
  await sql`create or replace view gatehouse_live_tokens_v1 as
    select t.token_hash, t.user_id, t.application_id, t.scopes, t.created_at, a.client_id, u.email
    from access_tokens t join applications a on a.id = t.application_id join users u on u.id = t.user_id
    where t.revoked_at is null ${earlier} ${extra}`.execute(db)
  await sql`create or replace view gatehouse_live_tokens_v2 as
    select t.token_hash, t.user_id, t.application_id, t.scopes, t.created_at, a.client_id, u.email
    from access_tokens t join applications a on a.id = t.application_id left join users u on u.id = t.user_id
    where t.revoked_at is null ${earlier} ${extra}`.execute(db)
  await sql`create or replace view gatehouse_live_tokens_v3 as
    select t.token_hash, t.user_id, t.application_id, t.scopes, t.created_at, a.client_id, u.email, t.dpop_jkt, t.expires_at
    from access_tokens t join applications a on a.id = t.application_id left join users u on u.id = t.user_id
    where t.revoked_at is null ${extra}`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await restrictEarlierViews(db, sql``)
  await db.schema.dropView('gatehouse_live_tokens_v4').execute()
  // The release before knows no audience: a token minted for one API must not become valid for all.
  await db.deleteFrom('access_tokens').where('audience', 'is not', null).execute()
  await db.deleteFrom('refresh_token_families').where('resources', 'is not', null).execute()
  for (const table of ['refresh_token_families', 'device_authorizations', 'pending_authorizations', 'authorization_codes']) {
    await db.schema.alterTable(table).dropColumn('resources').execute()
  }
  await db.schema.alterTable('access_tokens').dropColumn('audience').execute()
  await db.schema.alterTable('applications').dropConstraint('applications_resource_token_ttl').execute()
  await db.schema.alterTable('applications').dropColumn('resource_token_ttl_seconds').execute()
  await db.schema.dropTable('resource_identifiers').execute()
}
