import { type Kysely, sql } from 'kysely'

/*
 * Machine clients (RFC 6749 §4.4, docs/decisions/021-machine-tokens.md).
 *
 * - applications.client_credentials_scopes: the scopes an operator granted the application for
 *   the client credentials grant; null while the grant is not enabled. Only the operator's
 *   command line and admin pages write it, never the console.
 * - access_tokens.user_id becomes nullable: a client credentials token is issued to the
 *   application itself, for no user (RFC 9068 §2.2: its `sub` is the client). Every other
 *   token keeps its user, which the check ties to the absence of a code: a machine token is
 *   never exchanged for one.
 * - gatehouse_live_tokens_v2: the live tokens of both kinds, with the columns of _v1, whose
 *   user_id and email are null for a machine token. _v1 keeps its contract (docs/decisions/017-live-token-view.md):
 *   its inner join on users already leaves machine tokens out, so a verifier of an earlier
 *   release never meets a token without a user; it refuses them, failing closed. Both views
 *   are inlined by PostgreSQL; the left join is by primary key, so a lookup through _v2 costs
 *   what one through _v1 costs.
 * - access_tokens_live_machine_idx: the quota on a machine application's live tokens reads
 *   them newest first (src/repositories/access-tokens.ts revokeMachineTokensBeyond), as
 *   access_tokens_live_grant_idx serves a user's grant.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('applications')
    .addColumn('client_credentials_scopes', sql`text[]`)
    .execute()
  await db.schema
    .alterTable('access_tokens')
    .alterColumn('user_id', (c) => c.dropNotNull())
    .execute()
  await db.schema
    .alterTable('access_tokens')
    .addCheckConstraint('access_tokens_machine_without_code', sql`user_id is not null or authorization_code_id is null`)
    .execute()
  await db.schema
    .createIndex('access_tokens_live_machine_idx')
    .on('access_tokens')
    .expression(sql`application_id, created_at desc`)
    .where(sql<boolean>`user_id is null and revoked_at is null`)
    .execute()
  await db.schema
    .createView('gatehouse_live_tokens_v2')
    .as(
      db
        .selectFrom('access_tokens as t')
        .innerJoin('applications as a', 'a.id', 't.application_id')
        .leftJoin('users as u', 'u.id', 't.user_id')
        .select(['t.token_hash', 't.user_id', 't.application_id', 't.scopes', 't.created_at', 'a.client_id', 'u.email'])
        .where('t.revoked_at', 'is', null),
    )
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropView('gatehouse_live_tokens_v2').execute()
  await db.schema.dropIndex('access_tokens_live_machine_idx').execute()
  await db.deleteFrom('access_tokens').where('user_id', 'is', null).execute()
  await db.schema.alterTable('access_tokens').dropConstraint('access_tokens_machine_without_code').execute()
  await db.schema
    .alterTable('access_tokens')
    .alterColumn('user_id', (c) => c.setNotNull())
    .execute()
  await db.schema.alterTable('applications').dropColumn('client_credentials_scopes').execute()
}
