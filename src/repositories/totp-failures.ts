import { sql } from 'kysely'
import type { Db } from '../db/connect.js'

/*
 * Wrong codes typed since the account's last proven second factor, on its authenticator app's
 * row (totp_secrets.failed_codes, migrations/0016_totp_failed_codes.ts). The threshold is the
 * caller's (SECOND_FACTOR_LOCK_AFTER): repositories hold no policy number.
 */

/** The account's count of consecutive wrong codes; undefined when it has no authenticator app. */
export async function findFailedCodes(db: Db, userId: string): Promise<number | undefined> {
  const row = await db.selectFrom('totp_secrets').select('failed_codes').where('user_id', '=', userId).executeTakeFirst()
  return row?.failed_codes
}

/** Counts one wrong code in one statement; the new count, or undefined when the account has no authenticator app. */
export async function countFailedCode(db: Db, userId: string): Promise<number | undefined> {
  const row = await db
    .updateTable('totp_secrets')
    .set({ failed_codes: sql`failed_codes + 1` })
    .where('user_id', '=', userId)
    .returning('failed_codes')
    .executeTakeFirst()
  return row?.failed_codes
}

/** A second factor was proven: the count starts again (and a lock, if any, is lifted). */
export async function clearFailedCodes(db: Db, userId: string): Promise<void> {
  await db.updateTable('totp_secrets').set({ failed_codes: 0 }).where('user_id', '=', userId).where('failed_codes', '>', 0).execute()
}
