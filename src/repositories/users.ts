import { sql } from 'kysely'
import type { Db } from '../db/connect.js'
import type { User } from '../db/schema.js'
import { containing } from './like-pattern.js'

export function findUserByEmail(db: Db, email: string): Promise<User | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst()
}

export function findUserById(db: Db, id: string): Promise<User | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst()
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

/**
 * Locks the user's row until the end of `trx` (FOR UPDATE: no code, token or application can
 * reference it meanwhile, each taking a key-share lock), so that a suspension and a deletion of
 * one user do not interleave; undefined when there is no such user.
 */
export function lockUser(trx: Db, id: string): Promise<User | undefined> {
  return trx.selectFrom('users').selectAll().where('id', '=', id).forUpdate().executeTakeFirst()
}

/**
 * Locks the user's row until the end of `trx` for a change of their own credentials (a factor
 * added, a password reset, the operator's reset of the second factor): FOR NO KEY UPDATE, which
 * serialises such changes with each other and with lockUser, yet lets a concurrent refresh insert
 * its access token, whose foreign key takes the row FOR KEY SHARE. Those changes go on to revoke
 * refresh-token families that such a refresh holds (src/accounts/sessions/end-sessions.ts): with
 * FOR UPDATE here, each would wait for the other, and PostgreSQL would abort one as a deadlock.
 */
export function lockUserForChange(trx: Db, id: string): Promise<User | undefined> {
  return trx.selectFrom('users').selectAll().where('id', '=', id).forNoKeyUpdate().executeTakeFirst()
}

/** Deletes the user; sessions, applications, grants, codes, tokens and mailed links go with it (ON DELETE CASCADE). */
export async function deleteUserRow(db: Db, id: string): Promise<boolean> {
  const row = await db.deleteFrom('users').where('id', '=', id).returning('id').executeTakeFirst()
  return row !== undefined
}

export async function setOperator(db: Db, userId: string, isOperator: boolean): Promise<void> {
  await db.updateTable('users').set({ is_operator: isOperator }).where('id', '=', userId).execute()
}

export async function setUserSuspended(db: Db, userId: string, at: Date | null): Promise<void> {
  await db.updateTable('users').set({ suspended_at: at }).where('id', '=', userId).execute()
}

export interface UserListing {
  id: string
  email: string
  created_at: Date
  is_operator: boolean
  suspended_at: Date | null
  email_verified_at: Date | null
  /** A TOTP secret or a passkey (migrations/0010_second_factor.ts). */
  second_factor: boolean
  applications: number
}

/** Users whose email contains `query` (all when empty), newest first. */
export function listUsers(
  db: Db,
  options: { query: string; limit: number; offset: number; operatorsOnly?: boolean },
): Promise<UserListing[]> {
  let q = db
    .selectFrom('users')
    .select([
      'users.id',
      'users.email',
      'users.created_at',
      'users.is_operator',
      'users.suspended_at',
      'users.email_verified_at',
      'users.second_factor',
    ])
    .select((eb) =>
      eb
        .selectFrom('applications')
        .select(sql<number>`count(*)::int`.as('n'))
        .whereRef('applications.owner_id', '=', 'users.id')
        .as('applications'),
    )
  if (options.query !== '') q = q.where('users.email', 'like', containing(options.query.toLowerCase()))
  if (options.operatorsOnly) q = q.where('users.is_operator', '=', true)
  return q.orderBy('users.created_at', 'desc').orderBy('users.id').limit(options.limit).offset(options.offset).execute() as Promise<
    UserListing[]
  >
}

/** One more recovery of the account: device cookies signed at an earlier version stop working. */
export async function bumpCredentialVersion(db: Db, userId: string): Promise<void> {
  await db
    .updateTable('users')
    .set((eb) => ({ credential_version: eb('credential_version', '+', 1) }))
    .where('id', '=', userId)
    .execute()
}
