import type { Kysely } from 'kysely'

/*
 * The one definition of a live token (docs/decisions/017-live-token-view.md): the rows of
 * gatehouse_live_tokens_v1 are the tokens Gatehouse accepts, with what introspection, token info
 * and every database-mode verifier answer with. Both the server and @gatehouse/verifier
 * (LIVE_TOKEN_SQL) select from it, so a later rule of validity is one migration that replaces
 * the view's definition (`create or replace`, same columns), and verifiers already deployed
 * follow it without an upgrade. Its columns are a contract and never change; another shape is a
 * view `_v2` beside this one. PostgreSQL inlines a simple view into the statement that reads it,
 * so the lookup keeps the plan it had as a join of the tables (test/integration/resource/live-token-view.test.ts).
 * The view runs with its owner's rights, so a resource API's role needs SELECT on it only.
 * A view keeps no rows of its own, so the janitor has nothing to expire here: access_tokens'
 * own rule (src/repositories/janitor.ts) bounds what it shows.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createView('gatehouse_live_tokens_v1')
    .as(
      db
        .selectFrom('access_tokens as t')
        .innerJoin('applications as a', 'a.id', 't.application_id')
        .innerJoin('users as u', 'u.id', 't.user_id')
        .select(['t.token_hash', 't.user_id', 't.application_id', 't.scopes', 't.created_at', 'a.client_id', 'u.email'])
        .where('t.revoked_at', 'is', null),
    )
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropView('gatehouse_live_tokens_v1').execute()
}
