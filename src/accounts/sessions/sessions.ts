import { type AuditTrail, auditDetail } from '../../audit/audit-log.js'
import type { Db } from '../../db/connect.js'
import { randomToken, sha256Hex } from '../../lib/crypto.js'
import { describeUserAgent } from '../../lib/user-agent.js'
import { hasControlCharacter } from '../../lib/text.js'
import {
  addSessionMethods,
  deleteSession,
  deleteSessionsBeyond,
  findSessionUser,
  insertSession,
  listLiveSessions,
  type StoredSessionUser,
} from '../../repositories/sessions.js'
import { closeOtherDoors } from '../recovery/recovery.js'
import { type RevocationContext, revoke } from '../../revocation/revoke.js'
import { endSessionsOfUser, sessionSid } from './end-sessions.js'

/** The user of a live session, with what is derived from the session's stored digest. */
export interface SessionUser extends StoredSessionUser {
  /**
   * A stable id of the session for OpenID Connect's `sid` claim: a digest of the session's
   * digest, never the cookie.
   */
  readonly sid: string
  /** The session's stored digest (sessions.id_hash): what a statement re-checks the session by. */
  readonly sessionKey: string
  /**
   * Read from this process's session cache rather than the database: only a statement that
   * re-checks the session may act on it (src/accounts/sessions/session-cache.ts).
   */
  readonly cached?: true
}

/**
 * How stale "last seen" may get. Writing it on every request would add a write to every page
 * view and every authorize request (docs/performance.md); at most once per five minutes per
 * session costs nothing measurable, and "Active sessions" needs no finer grain.
 */
export const LAST_SEEN_GRANULARITY_MS = 5 * 60_000

/** Where a request comes from, as "Active sessions" shows it. */
export interface SeenFrom {
  userAgent: string | undefined
  ip: string
}

/** The User-Agent as stored: at most 512 characters, without control characters; null when absent. */
function storedUserAgent(ua: string | undefined): string | null {
  if (!ua) return null
  const clean = hasControlCharacter(ua) ? ua.replace(/[\u0000-\u001f\u007f-\u009f]/g, '') : ua
  return clean.slice(0, 512) || null
}

/**
 * Console sessions live in the database; the cookie holds only a random id, and the database
 * only its digest, so a leaked dump cannot be replayed as a cookie. Expired sessions are the
 * janitor's to delete (src/limits/janitor.ts); every read of a session checks its expiry.
 */
export async function startSession(
  db: Db,
  userId: string,
  now: Date,
  ttlMs: number,
  options: { from?: SeenFrom; maxSessions?: number; amr?: readonly string[] } = {},
): Promise<string> {
  // Room for the new one: a log-in with the password ends the oldest sessions beyond the cap. No
  // one meant to end them, so their refresh-token families live on, bounded by their own lifetime
  // (docs/expiring-tokens.md "Revocation"), as those of sessions the janitor deletes at expiry.
  if (options.maxSessions !== undefined) await deleteSessionsBeyond(db, userId, now, options.maxSessions - 1)
  const id = randomToken(32)
  await insertSession(db, {
    idHash: sha256Hex(id),
    userId,
    now,
    expiresAt: new Date(now.getTime() + ttlMs),
    userAgent: storedUserAgent(options.from?.userAgent),
    ip: options.from?.ip ?? null,
    amr: options.amr ?? ['pwd'],
  })
  return id
}

/**
 * The session's user. With `from`, a session last marked seen more than
 * LAST_SEEN_GRANULARITY_MS ago is marked seen now, from there, in the same statement: a write
 * per session per five minutes at most, and never an extra round trip.
 */
export async function resolveSession(db: Db, id: string, now: Date, from?: SeenFrom): Promise<SessionUser | undefined> {
  const idHash = sessionKeyOf(id)
  return idHash === undefined ? undefined : resolveSessionByKey(db, idHash, now, from)
}

/** resolveSession, for a cookie whose digest (sessionKeyOf) the caller has already taken. */
export async function resolveSessionByKey(db: Db, idHash: string, now: Date, from?: SeenFrom): Promise<SessionUser | undefined> {
  const staleBefore = new Date(now.getTime() - LAST_SEEN_GRANULARITY_MS)
  const user = await findSessionUser(db, idHash, now, from && { staleBefore, userAgent: storedUserAgent(from.userAgent), ip: from.ip })
  return user && { ...user, sid: sessionSid(idHash), sessionKey: idHash }
}

/** RFC 8176 methods a session proves with each kind of second factor (the log-in's second step records the same). */
export const FACTOR_METHODS = { totp: ['otp', 'mfa'], passkey: ['hwk', 'mfa'] } as const

/**
 * The browser session whose stored digest is `sessionKey` (sessionKeyOf) proved a second factor after its log-in: it set one up (the TOTP
 * confirmation's code, a passkey registration's user-verified assertion) or confirmed with one
 * ("Confirm it's you" with a code). Its amr gains the factor's methods, so REQUIRE_TWO_FACTOR counts
 * the session as having used a factor (src/accounts/second-factor/policy.ts usedSecondFactor) and its
 * later ID Tokens say so; auth_time stays the log-in's (docs/decisions/011-second-factor.md).
 * A cached read of the session keeps the old amr for at most SESSION_CACHE_TTL_MS, which only ever
 * asks for a fresh read (src/http/session.ts).
 */
export async function markSecondFactorUsed(db: Db, sessionKey: string | undefined, factor: keyof typeof FACTOR_METHODS): Promise<void> {
  if (sessionKey !== undefined) await addSessionMethods(db, sessionKey, FACTOR_METHODS[factor])
}

/** The stored digest of a session cookie's value; undefined for a value no session can have. */
export function sessionKeyOf(id: string): string | undefined {
  return id.length === 0 || id.length > 100 ? undefined : sha256Hex(id)
}

export function endSession(db: Db, id: string): Promise<void> {
  return deleteSession(db, sha256Hex(id))
}

/**
 * Log-out: ends the session, and records it when it was a live session of `userId`; the one
 * log-out, for the console's form and for the end_session_endpoint, whose relying party
 * (`requestedBy`) the record names.
 */
export async function logOut(
  ctx: RevocationContext,
  id: string,
  now: Date,
  logout: { userId: string | null; audit: AuditTrail; requestedBy?: { clientId: string; name: string } | undefined },
): Promise<void> {
  const { userId, audit, requestedBy } = logout
  await endSession(ctx.db, id)
  // The refresh-token families this session's authorizations started end with it (docs/expiring-tokens.md).
  const key = sessionKeyOf(id)
  if (key !== undefined) await revoke(ctx, { kind: 'sessions-ended', sids: [sessionSid(key)] }, now)
  if (userId === null) return
  if (requestedBy === undefined) return audit.record({ event: 'user.logged_out', userId })
  return audit.record({ event: 'user.logged_out', userId, application: requestedBy, detail: auditDetail.loggedOutByApplication() })
}

/**
 * "Log out of all other sessions": every session of the user but the one with this id, with the
 * refresh-token families approved in them (endSessionsOfUser), and every mailed link and device
 * cookie of the account (closeOtherDoors); how many sessions ended.
 */
export function endOtherSessions(ctx: RevocationContext, userId: string, currentId: string | undefined, now: Date): Promise<number> {
  return ctx.db.transaction().execute(async (trx) => {
    await closeOtherDoors(trx, userId, now)
    return endSessionsOfUser({ db: trx, bus: ctx.bus }, userId, now, currentId === undefined ? undefined : sha256Hex(currentId))
  })
}

export interface SessionView {
  device: string
  ip: string
  createdIso: string
  lastSeenIso: string
  current: boolean
}

/** "Active sessions": the user's live sessions, the one with `currentId` marked. */
export async function listSessions(db: Db, userId: string, currentId: string | undefined, now: Date): Promise<SessionView[]> {
  const currentHash = currentId === undefined ? undefined : sha256Hex(currentId)
  const rows = await listLiveSessions(db, userId, now)
  return rows.map((r) => ({
    device: describeUserAgent(r.user_agent),
    ip: r.ip ?? 'unknown',
    createdIso: r.created_at.toISOString(),
    lastSeenIso: r.last_seen_at.toISOString(),
    current: r.id_hash === currentHash,
  }))
}
