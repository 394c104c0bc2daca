import type { Db } from '../db/connect.js'
import type { User } from '../db/schema.js'

export function findUserByEmail(db: Db, email: string): Promise<User | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst()
}

/** Inserts the user unless the email is taken; undefined when it was (users_email_key). */
export function insertUser(db: Db, user: { email: string; passwordHash: string; now: Date }): Promise<User | undefined> {
  return db
    .insertInto('users')
    .values({ email: user.email, password_hash: user.passwordHash, created_at: user.now })
    .onConflict((oc) => oc.column('email').doNothing())
    .returningAll()
    .executeTakeFirst()
}

/** Locks the user's row until the transaction ends: serialises what a per-user quota counts. */
export async function lockUser(db: Db, id: string): Promise<boolean> {
  const row = await db.selectFrom('users').select('id').where('id', '=', id).forUpdate().executeTakeFirst()
  return row !== undefined
}
