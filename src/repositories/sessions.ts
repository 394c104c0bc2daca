import type { Db } from '../db/connect.js'

export interface SessionUser {
  id: string
  email: string
  /** Sees the "Operator" menu entry and /admin (README "Operating Gatehouse"). */
  is_operator: boolean
}

export async function insertSession(db: Db, s: { idHash: string; userId: string; now: Date; expiresAt: Date }): Promise<void> {
  await db.insertInto('sessions').values({ id_hash: s.idHash, user_id: s.userId, created_at: s.now, expires_at: s.expiresAt }).execute()
}

/** The live session's user, by primary key (sessions_pkey). */
export function findSessionUser(db: Db, idHash: string, now: Date): Promise<SessionUser | undefined> {
  return db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select(['users.id', 'users.email', 'users.is_operator'])
    .where('sessions.id_hash', '=', idHash)
    .where('sessions.expires_at', '>', now)
    .where('users.suspended_at', 'is', null)
    .executeTakeFirst()
}

export async function deleteSession(db: Db, idHash: string): Promise<void> {
  await db.deleteFrom('sessions').where('id_hash', '=', idHash).execute()
}

/** The user's expired sessions (sessions_user_id_idx), so sessions do not pile up forever. */
export async function deleteExpiredSessions(db: Db, userId: string, now: Date): Promise<void> {
  await db.deleteFrom('sessions').where('user_id', '=', userId).where('expires_at', '<=', now).execute()
}
