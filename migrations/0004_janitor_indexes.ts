import type { Kysely } from 'kysely'

/*
 * What the janitor (src/limits/janitor.ts) looks for, indexed: each of its batches selects at
 * most 1,000 expired rows, and without these each batch would scan the whole table. The
 * revoked-token index is partial, so issuing a token (revoked_at null) never touches it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('authorization_codes_expires_at_idx').on('authorization_codes').column('expires_at').execute()
  await db.schema.createIndex('sessions_expires_at_idx').on('sessions').column('expires_at').execute()
  await db.schema.createIndex('rate_limits_window_start_idx').on('rate_limits').column('window_start').execute()
  await db.schema
    .createIndex('access_tokens_revoked_at_idx')
    .on('access_tokens')
    .column('revoked_at')
    .where('revoked_at', 'is not', null)
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const name of [
    'access_tokens_revoked_at_idx',
    'rate_limits_window_start_idx',
    'sessions_expires_at_idx',
    'authorization_codes_expires_at_idx',
  ]) {
    await db.schema.dropIndex(name).execute()
  }
}
