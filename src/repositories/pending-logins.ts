import { sql } from 'kysely'
import type { Db } from '../db/connect.js'

/*
 * Log-ins past the password and waiting for the second factor (migrations/0010_second_factor.ts),
 * found by the digest of the id the browser's cookie holds.
 */

export async function insertPendingLogin(db: Db, row: { idHash: string; userId: string; now: Date; expiresAt: Date }): Promise<void> {
  await db
    .insertInto('pending_logins')
    .values({ id_hash: row.idHash, user_id: row.userId, created_at: row.now, expires_at: row.expiresAt })
    .execute()
}

/** The unexpired pending log-in's account. */
export function findPendingLogin(db: Db, idHash: string, now: Date): Promise<{ user_id: string; failures: number } | undefined> {
  return db
    .selectFrom('pending_logins')
    .select(['user_id', 'failures'])
    .where('id_hash', '=', idHash)
    .where('expires_at', '>', now)
    .executeTakeFirst()
}

/**
 * Takes one of the pending log-in's `maxTries` tries before its factor is checked, in one
 * statement, so that concurrent submissions cannot pass the cap (a read, then a write, would let
 * every submission read the same count). The try's number (1 for the first), or undefined when
 * the pending log-in has expired, ended, or used its tries.
 */
export async function takePendingTry(db: Db, idHash: string, maxTries: number, now: Date): Promise<number | undefined> {
  const row = await db
    .updateTable('pending_logins')
    .set({ failures: sql`failures + 1` })
    .where('id_hash', '=', idHash)
    .where('failures', '<', maxTries)
    .where('expires_at', '>', now)
    .returning('failures')
    .executeTakeFirst()
  return row?.failures
}

/**
 * Ends the pending log-in; its account when it was alive and this call ended it, so of two
 * concurrent completions exactly one gets a session.
 */
export async function takePendingLogin(db: Db, idHash: string, now: Date): Promise<string | undefined> {
  const row = await db
    .deleteFrom('pending_logins')
    .where('id_hash', '=', idHash)
    .where('expires_at', '>', now)
    .returning('user_id')
    .executeTakeFirst()
  return row?.user_id
}

export async function deletePendingLogin(db: Db, idHash: string): Promise<void> {
  await db.deleteFrom('pending_logins').where('id_hash', '=', idHash).execute()
}

/** Every pending log-in of the account (a recovery closes them: src/accounts/recovery/recovery.ts). */
export async function deletePendingLoginsOfUser(db: Db, userId: string): Promise<void> {
  await db.deleteFrom('pending_logins').where('user_id', '=', userId).execute()
}
