import type { AuditTrail } from '../audit/audit-log.js'
import type { Db } from '../db/connect.js'
import { randomToken, sha256 } from '../lib/crypto.js'
import { deleteExpiredSessions, deleteSession, findSessionUser, insertSession, type SessionUser } from '../repositories/sessions.js'

export type { SessionUser }

/**
 * Console sessions live in the database; the cookie holds only a random id, and the database
 * only its digest, so a leaked dump cannot be replayed as a cookie.
 */
export async function startSession(db: Db, userId: string, now: Date, ttlMs: number): Promise<string> {
  await deleteExpiredSessions(db, userId, now)
  const id = randomToken(32)
  await insertSession(db, { idHash: sha256(id), userId, now, expiresAt: new Date(now.getTime() + ttlMs) })
  return id
}

export function resolveSession(db: Db, id: string, now: Date): Promise<SessionUser | undefined> {
  if (id.length === 0 || id.length > 100) return Promise.resolve(undefined)
  return findSessionUser(db, sha256(id), now)
}

export function endSession(db: Db, id: string): Promise<void> {
  return deleteSession(db, sha256(id))
}

/** Log-out: ends the session, and records it when it was a live session of `userId`. */
export async function logOut(db: Db, id: string, userId: string | null, audit: AuditTrail): Promise<void> {
  await endSession(db, id)
  if (userId !== null) await audit.record({ event: 'user.logged_out', userId })
}
