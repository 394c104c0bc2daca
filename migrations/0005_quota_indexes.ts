import { type Kysely, sql } from 'kysely'

/*
 * The quotas of docs/operating/limits.md, each checked inside the statement that issues:
 * - live tokens per (user, application): the code exchange revokes those beyond the newest
 *   MAX_TOKENS_PER_GRANT, reading this partial index (live rows only, newest first), so its
 *   cost does not grow with the revoked tokens the janitor has not deleted yet;
 * - codes per (user, application) in a minute: remembered consent counts the last minute's
 *   codes. This index replaces authorization_codes_user_id_idx, whose lookups it serves by its
 *   leading column, so issuing a code maintains as many indexes as before.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('access_tokens_live_grant_idx')
    .on('access_tokens')
    .expression(sql`user_id, application_id, created_at desc`)
    .where(sql.ref('revoked_at'), 'is', null)
    .execute()
  await db.schema
    .createIndex('authorization_codes_user_application_created_idx')
    .on('authorization_codes')
    .columns(['user_id', 'application_id', 'created_at'])
    .execute()
  await db.schema.dropIndex('authorization_codes_user_id_idx').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('authorization_codes_user_id_idx').on('authorization_codes').column('user_id').execute()
  await db.schema.dropIndex('authorization_codes_user_application_created_idx').execute()
  await db.schema.dropIndex('access_tokens_live_grant_idx').execute()
}
