import type { Db } from '../db/connect.js'

/* Recovery codes by digest (migrations/0010_second_factor.ts); a used code is deleted. */

/** The account's codes become exactly `codeHashes`: the previous ones stop working. */
export async function replaceRecoveryCodes(db: Db, userId: string, codeHashes: readonly string[], now: Date): Promise<void> {
  await db.deleteFrom('recovery_codes').where('user_id', '=', userId).execute()
  if (codeHashes.length === 0) return
  await db
    .insertInto('recovery_codes')
    .values(codeHashes.map((code_hash) => ({ user_id: userId, code_hash, created_at: now })))
    .execute()
}

/** Uses a code: one DELETE, so of two concurrent uses of one code exactly one succeeds. */
export async function consumeRecoveryCode(db: Db, userId: string, codeHash: string): Promise<boolean> {
  const result = await db.deleteFrom('recovery_codes').where('user_id', '=', userId).where('code_hash', '=', codeHash).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export async function countRecoveryCodes(db: Db, userId: string): Promise<number> {
  const row = await db
    .selectFrom('recovery_codes')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}
