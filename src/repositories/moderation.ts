import { sql } from 'kysely'
import type { Db } from '../db/connect.js'
import type { Application, User } from '../db/schema.js'

/*
 * What the operator's tools read and write (README "Operating Gatehouse"): the command line
 * and the admin pages, through src/operator/. Lists are bounded pages, newest first.
 */

export interface UserListing {
  id: string
  email: string
  created_at: Date
  is_operator: boolean
  suspended_at: Date | null
  email_verified_at: Date | null
  applications: number
}

/** Escapes LIKE's wildcards, so a search for "a_b" finds "a_b" and not "axb". */
function containing(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

/** Users whose email contains `query` (all when empty), newest first. */
export function listUsers(
  db: Db,
  options: { query: string; limit: number; offset: number; operatorsOnly?: boolean },
): Promise<UserListing[]> {
  let q = db
    .selectFrom('users')
    .select(['users.id', 'users.email', 'users.created_at', 'users.is_operator', 'users.suspended_at', 'users.email_verified_at'])
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

export function findUserById(db: Db, id: string): Promise<User | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function setOperator(db: Db, userId: string, isOperator: boolean): Promise<void> {
  await db.updateTable('users').set({ is_operator: isOperator }).where('id', '=', userId).execute()
}

/** Locks the user's row (a suspension and a deletion of one user do not interleave). */
export function lockUserRow(db: Db, id: string): Promise<User | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).forUpdate().executeTakeFirst()
}

export async function setUserSuspended(db: Db, userId: string, at: Date | null): Promise<void> {
  await db.updateTable('users').set({ suspended_at: at }).where('id', '=', userId).execute()
}

export async function deleteUserSessions(db: Db, userId: string): Promise<number> {
  const rows = await db.deleteFrom('sessions').where('user_id', '=', userId).returning('id_hash').execute()
  return rows.length
}

export interface ApplicationListing {
  id: string
  client_id: string
  name: string
  owner_id: string
  owner_email: string
  created_at: Date
  suspended_at: Date | null
  verified_at: Date | null
  is_resource_server: boolean
}

/** Applications whose name, client_id or owner's email contains `query` (all when empty), newest first. */
export function listApplicationsForOperator(
  db: Db,
  options: { query: string; limit: number; offset: number; ownerId?: string },
): Promise<ApplicationListing[]> {
  let q = db
    .selectFrom('applications')
    .innerJoin('users', 'users.id', 'applications.owner_id')
    .select([
      'applications.id',
      'applications.client_id',
      'applications.name',
      'applications.owner_id',
      'users.email as owner_email',
      'applications.created_at',
      'applications.suspended_at',
      'applications.verified_at',
      'applications.is_resource_server',
    ])
  if (options.query !== '') {
    const pattern = containing(options.query)
    q = q.where((eb) =>
      eb.or([
        eb('applications.name', 'ilike', pattern),
        eb('applications.client_id', '=', options.query),
        eb('users.email', 'like', containing(options.query.toLowerCase())),
      ]),
    )
  }
  if (options.ownerId !== undefined) q = q.where('applications.owner_id', '=', options.ownerId)
  return q.orderBy('applications.created_at', 'desc').orderBy('applications.id').limit(options.limit).offset(options.offset).execute()
}

export type ApplicationWithOwner = Application & { owner_email: string }

export function findApplicationForOperator(
  db: Db,
  where: { clientId: string } | { id: string },
): Promise<ApplicationWithOwner | undefined> {
  const q = db
    .selectFrom('applications')
    .innerJoin('users', 'users.id', 'applications.owner_id')
    .selectAll('applications')
    .select('users.email as owner_email')
  return (
    'id' in where ? q.where('applications.id', '=', where.id) : q.where('applications.client_id', '=', where.clientId)
  ).executeTakeFirst()
}

/** Locks the application's row for a moderation step. */
export function lockApplicationRow(db: Db, id: string): Promise<Application | undefined> {
  return db.selectFrom('applications').selectAll().where('id', '=', id).forUpdate().executeTakeFirst()
}

export type ApplicationFlags = Partial<Pick<Application, 'suspended_at' | 'verified_at' | 'is_resource_server'>>

export async function setApplicationFlags(db: Db, id: string, flags: ApplicationFlags): Promise<void> {
  await db.updateTable('applications').set(flags).where('id', '=', id).execute()
}

/** The owner's live applications, suspended at `at` with their owner. */
export async function suspendApplicationsOfOwner(db: Db, ownerId: string, at: Date): Promise<string[]> {
  const rows = await db
    .updateTable('applications')
    .set({ suspended_at: at })
    .where('owner_id', '=', ownerId)
    .where('suspended_at', 'is', null)
    .returning('id')
    .execute()
  return rows.map((r) => r.id)
}

/** The owner's applications suspended together with their owner at `at`, active again. */
export async function unsuspendApplicationsOfOwner(db: Db, ownerId: string, at: Date): Promise<number> {
  const rows = await db
    .updateTable('applications')
    .set({ suspended_at: null })
    .where('owner_id', '=', ownerId)
    .where('suspended_at', '=', at)
    .returning('id')
    .execute()
  return rows.length
}

export async function deleteApplicationRow(db: Db, id: string): Promise<boolean> {
  const rows = await db.deleteFrom('applications').where('id', '=', id).returning('id').execute()
  return rows.length > 0
}
