import type { Db } from '../db/connect.js'

export interface SessionUser {
  id: string
  email: string
  /** Whether the account's address is verified: unverified accounts may not register applications. */
  emailVerified: boolean
}

export interface NewSession {
  idHash: string
  userId: string
  now: Date
  expiresAt: Date
  userAgent: string | null
  ip: string | null
}

export async function insertSession(db: Db, s: NewSession): Promise<void> {
  await db
    .insertInto('sessions')
    .values({
      id_hash: s.idHash,
      user_id: s.userId,
      created_at: s.now,
      expires_at: s.expiresAt,
      user_agent: s.userAgent,
      ip: s.ip,
      last_seen_at: s.now,
    })
    .execute()
}

/** The live session's user, by primary key (sessions_pkey), with when the session was last marked seen. */
export async function findSessionUser(db: Db, idHash: string, now: Date): Promise<(SessionUser & { lastSeenAt: Date }) | undefined> {
  const row = await db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select(['users.id', 'users.email', 'users.email_verified_at', 'sessions.last_seen_at'])
    .where('sessions.id_hash', '=', idHash)
    .where('sessions.expires_at', '>', now)
    .executeTakeFirst()
  return row && { id: row.id, email: row.email, emailVerified: row.email_verified_at !== null, lastSeenAt: row.last_seen_at }
}

/** Marks the session seen now, from this address and browser, unless it was marked after `staleBefore`. */
export async function touchSession(
  db: Db,
  s: { idHash: string; now: Date; staleBefore: Date; userAgent: string | null; ip: string | null },
): Promise<void> {
  await db
    .updateTable('sessions')
    .set({ last_seen_at: s.now, user_agent: s.userAgent, ip: s.ip })
    .where('id_hash', '=', s.idHash)
    .where('last_seen_at', '<', s.staleBefore)
    .execute()
}

export interface SessionListing {
  id_hash: string
  created_at: Date
  last_seen_at: Date
  user_agent: string | null
  ip: string | null
}

/** The user's live sessions, most recently seen first (sessions_user_id_idx). */
export function listLiveSessions(db: Db, userId: string, now: Date): Promise<SessionListing[]> {
  return db
    .selectFrom('sessions')
    .select(['id_hash', 'created_at', 'last_seen_at', 'user_agent', 'ip'])
    .where('user_id', '=', userId)
    .where('expires_at', '>', now)
    .orderBy('last_seen_at', 'desc')
    .orderBy('created_at', 'desc')
    .execute()
}

export async function deleteSession(db: Db, idHash: string): Promise<void> {
  await db.deleteFrom('sessions').where('id_hash', '=', idHash).execute()
}

/** Every session of the user but `keepIdHash` (none kept when undefined); how many ended. */
export async function deleteSessionsOfUser(db: Db, userId: string, keepIdHash?: string): Promise<number> {
  let q = db.deleteFrom('sessions').where('user_id', '=', userId)
  if (keepIdHash !== undefined) q = q.where('id_hash', '!=', keepIdHash)
  const result = await q.executeTakeFirst()
  return Number(result.numDeletedRows)
}

/** The user's expired sessions (sessions_user_id_idx), so sessions do not pile up forever. */
export async function deleteExpiredSessions(db: Db, userId: string, now: Date): Promise<void> {
  await db.deleteFrom('sessions').where('user_id', '=', userId).where('expires_at', '<=', now).execute()
}
