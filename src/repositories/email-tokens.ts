import type { Db } from '../db/connect.js'
import type { EmailTokenPurpose } from '../db/schema.js'

/* Single-use links mailed to users (migrations/0008_accounts.ts), found by digest only. */

export interface NewEmailToken {
  tokenHash: string
  purpose: EmailTokenPurpose
  userId: string
  email: string
  now: Date
  expiresAt: Date
}

export async function insertEmailToken(db: Db, t: NewEmailToken): Promise<void> {
  await db
    .insertInto('email_tokens')
    .values({
      token_hash: t.tokenHash,
      purpose: t.purpose,
      user_id: t.userId,
      email: t.email,
      created_at: t.now,
      expires_at: t.expiresAt,
    })
    .execute()
}

export interface LiveEmailToken {
  user_id: string
  email: string
}

/** The link's account and address while it is unused and unexpired (email_tokens_token_hash_key); nothing is changed. */
export function findLiveEmailToken(db: Db, tokenHash: string, purpose: EmailTokenPurpose, now: Date): Promise<LiveEmailToken | undefined> {
  return db
    .selectFrom('email_tokens')
    .select(['user_id', 'email'])
    .where('token_hash', '=', tokenHash)
    .where('purpose', '=', purpose)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst()
}

/**
 * Uses the link: one UPDATE that succeeds only while it is unused and unexpired, so of two
 * concurrent uses exactly one gets the row back. `userId` narrows it to one account's links.
 */
export function consumeEmailToken(
  db: Db,
  t: { tokenHash: string; purpose: EmailTokenPurpose; now: Date; userId?: string },
): Promise<LiveEmailToken | undefined> {
  let q = db
    .updateTable('email_tokens')
    .set({ used_at: t.now })
    .where('token_hash', '=', t.tokenHash)
    .where('purpose', '=', t.purpose)
    .where('used_at', 'is', null)
    .where('expires_at', '>', t.now)
  if (t.userId !== undefined) q = q.where('user_id', '=', t.userId)
  return q.returning(['user_id', 'email']).executeTakeFirst()
}

/** Marks every unused link of this purpose of the user used: a newer action made them void. */
export async function voidEmailTokens(db: Db, userId: string, purpose: EmailTokenPurpose, now: Date): Promise<void> {
  await db
    .updateTable('email_tokens')
    .set({ used_at: now })
    .where('user_id', '=', userId)
    .where('purpose', '=', purpose)
    .where('used_at', 'is', null)
    .execute()
}

/** Marks every unused link of the user used, whatever its purpose: a recovery closed them (src/accounts/recovery/recovery.ts). */
export async function voidAllEmailTokens(db: Db, userId: string, now: Date): Promise<void> {
  await db.updateTable('email_tokens').set({ used_at: now }).where('user_id', '=', userId).where('used_at', 'is', null).execute()
}
