import type { Db } from '../db/connect.js'

/** The user's display name (OpenID Connect `name`), null when they set none. */
export async function findDisplayName(db: Db, userId: string): Promise<string | null> {
  const row = await db.selectFrom('users').select('display_name').where('id', '=', userId).executeTakeFirst()
  return row?.display_name ?? null
}

/** Sets or removes the display name; `updated_at` of the profile claims moves with it. False when the name was already this. */
export async function setDisplayName(db: Db, userId: string, name: string | null, now: Date): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set({ display_name: name, profile_updated_at: now })
    .where('id', '=', userId)
    .where('display_name', 'is distinct from', name)
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

/** Removes the display name (and moves `updated_at` of the profile claims) when there was one. */
export async function clearProfile(db: Db, userId: string, now: Date): Promise<void> {
  await db
    .updateTable('users')
    .set({ display_name: null, profile_updated_at: now })
    .where('id', '=', userId)
    .where('display_name', 'is not', null)
    .execute()
}
