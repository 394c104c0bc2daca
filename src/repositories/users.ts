import { sql } from 'kysely'
import type { Db } from '../db/connect.js'
import type { User } from '../db/schema.js'

export function findUserByEmail(db: Db, email: string): Promise<User | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst()
}

export function findUserById(db: Db, id: string): Promise<User | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst()
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
export async function lockUserForQuota(db: Db, id: string): Promise<boolean> {
  const row = await db.selectFrom('users').select('id').where('id', '=', id).forNoKeyUpdate().executeTakeFirst()
  return row !== undefined
}

export async function setPasswordHash(db: Db, userId: string, passwordHash: string): Promise<void> {
  await db.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', userId).execute()
}

/**
 * Marks the address verified, only while it is still the account's address: a link mailed to an
 * address the account has since left proves nothing about the new one. True when it matched.
 */
export async function markEmailVerified(db: Db, userId: string, email: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('users')
    .set((eb) => ({ email_verified_at: eb.fn.coalesce('email_verified_at', eb.val(now)) }))
    .where('id', '=', userId)
    .where('email', '=', email)
    .returning('id')
    .executeTakeFirst()
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

/**
 * Gives the account a new, verified address, unless another account holds it. False when it
 * did (the unique key users_email_key would refuse it anyway; this answers without an error).
 */
export async function changeEmail(db: Db, userId: string, email: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('users')
    .set({ email, email_verified_at: now })
    .where('id', '=', userId)
    .where((eb) => eb.not(eb.exists(eb.selectFrom('users as other').select('other.id').where('other.email', '=', email))))
    .returning('id')
    .executeTakeFirst()
  return row !== undefined
}

/** Locks the user's row until the end of `trx`; undefined when there is no such user. */
export function lockUser(trx: Db, id: string): Promise<Pick<User, 'id' | 'email' | 'suspended_at'> | undefined> {
  return trx.selectFrom('users').select(['id', 'email', 'suspended_at']).where('id', '=', id).forUpdate().executeTakeFirst()
}

/** Deletes the user; sessions, applications, grants, codes, tokens and mailed links go with it (ON DELETE CASCADE). */
export async function deleteUser(db: Db, id: string): Promise<boolean> {
  const row = await db.deleteFrom('users').where('id', '=', id).returning('id').executeTakeFirst()
  return row !== undefined
}
