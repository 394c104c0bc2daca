import { sql } from 'kysely'
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

/**
 * Locks the user's row until the transaction ends: serialises what a per-user quota counts. FOR NO
 * KEY UPDATE, so rows that merely reference the user (sessions, audit events) are not held up.
 */
export async function lockUser(db: Db, id: string): Promise<boolean> {
  const row = await db.selectFrom('users').select('id').where('id', '=', id).forNoKeyUpdate().executeTakeFirst()
  return row !== undefined
}

/**
 * Sign-up in one statement: inserts the user unless the email is taken, and answers the id of
 * the account that has the email either way, with whether it is new. Undefined only when a
 * concurrent sign-up for the same email committed while this one waited (the statement's
 * snapshot does not see that row).
 */
export async function insertUserOrFindTaken(
  db: Db,
  user: { email: string; passwordHash: string; now: Date },
): Promise<{ id: string; created: boolean } | undefined> {
  const { rows } = await sql<{ id: string; created: boolean }>`
    with inserted as (
      insert into users (email, password_hash, created_at) values (${user.email}, ${user.passwordHash}, ${user.now})
      on conflict (email) do nothing
      returning id
    )
    select id, true as created from inserted
    union all
    select id, false as created from users where email = ${user.email} and not exists (select 1 from inserted)
  `.execute(db)
  return rows[0]
}
