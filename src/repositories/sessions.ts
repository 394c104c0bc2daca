import { sql } from 'kysely'
import type { Db } from '../db/connect.js'

/** A live session's user as stored (src/accounts/sessions/sessions.ts adds what is derived from the session's key). */
export interface StoredSessionUser {
  id: string
  email: string
  /** Sees the "Operator" menu entry and /admin (docs/operating/admin.md). */
  is_operator: boolean
  /** Whether the account's address is verified: unverified accounts may not register applications. */
  emailVerified: boolean
  /** Whether the account has a confirmed TOTP secret or a passkey. */
  secondFactor: boolean
  /** RFC 8176 methods of the session's log-in (pwd, otp, hwk, mfa). */
  amr: readonly string[]
  /** When the session's log-in happened (OpenID Connect auth_time). */
  authenticatedAt: Date
  /** The last password or factor confirmation: the log-in, or a later re-authentication ("sudo mode"). */
  confirmedAt: Date
}

export interface NewSession {
  idHash: string
  userId: string
  now: Date
  expiresAt: Date
  userAgent: string | null
  ip: string | null
  /** RFC 8176 methods of the log-in. */
  amr: readonly string[]
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
      amr: [...s.amr],
      authenticated_at: s.now,
    })
    .execute()
}

/**
 * The live session's user, by primary key (sessions_pkey), and in the same statement the
 * session marked seen now, from `seen`, when it was last marked before `seen.staleBefore`: one
 * round trip whether or not it writes, so page views and authorize requests pay no extra
 * statement for "Active sessions" (docs/performance.md). Without `seen`, nothing is written.
 */
export async function findSessionUser(
  db: Db,
  idHash: string,
  now: Date,
  seen?: { staleBefore: Date; userAgent: string | null; ip: string | null },
): Promise<StoredSessionUser | undefined> {
  const { rows } = await sql<SessionUserRow>`
    with found as (
      select users.id, users.email, users.is_operator, users.email_verified_at, users.second_factor,
        sessions.amr, sessions.authenticated_at, sessions.reauthenticated_at
      from sessions join users on users.id = sessions.user_id
      where sessions.id_hash = ${idHash} and sessions.expires_at > ${now} and users.suspended_at is null
    ), touched as (
      update sessions set last_seen_at = ${now}, user_agent = ${seen?.userAgent ?? null}, ip = ${seen?.ip ?? null}
      where ${seen !== undefined} and id_hash = ${idHash} and last_seen_at < ${seen?.staleBefore ?? now}
        and exists (select 1 from found)
      returning 1
    )
    select * from found
  `.execute(db)
  const row = rows[0]
  return (
    row && {
      id: row.id,
      email: row.email,
      is_operator: row.is_operator,
      emailVerified: row.email_verified_at !== null,
      secondFactor: row.second_factor,
      amr: row.amr,
      authenticatedAt: row.authenticated_at,
      confirmedAt:
        row.reauthenticated_at !== null && row.reauthenticated_at > row.authenticated_at ? row.reauthenticated_at : row.authenticated_at,
    }
  )
}

interface SessionUserRow {
  id: string
  email: string
  is_operator: boolean
  email_verified_at: Date | null
  second_factor: boolean
  amr: string[]
  authenticated_at: Date
  reauthenticated_at: Date | null
}

/** "Sudo mode": the session's user confirmed their password or a factor now. */
export async function markReauthenticated(db: Db, idHash: string, now: Date): Promise<void> {
  await db.updateTable('sessions').set({ reauthenticated_at: now }).where('id_hash', '=', idHash).execute()
}

/**
 * The session proved `methods` (RFC 8176) since its log-in: they are added to its amr, those it
 * has already left as they are, in the order given.
 */
export async function addSessionMethods(db: Db, idHash: string, methods: readonly string[]): Promise<void> {
  await sql`
    update sessions
    set amr = amr || array(select m from unnest(${[...methods]}::text[]) with ordinality as t(m, i) where not (m = any(sessions.amr)) order by i)
    where id_hash = ${idHash}`.execute(db)
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

/**
 * Every session of the user but `keepIdHash` (none kept when undefined); the ended sessions'
 * digests, whose `sid`s end their refresh-token families (src/accounts/sessions/end-sessions.ts
 * endSessionsOfUser, the only caller; docs/expiring-tokens.md).
 */
export async function deleteSessionsOfUserKeys(db: Db, userId: string, keepIdHash?: string): Promise<string[]> {
  let q = db.deleteFrom('sessions').where('user_id', '=', userId)
  if (keepIdHash !== undefined) q = q.where('id_hash', '!=', keepIdHash)
  const rows = await q.returning('id_hash').execute()
  return rows.map((r) => r.id_hash)
}

/**
 * The user's live sessions beyond the newest `keep`, oldest first (MAX_SESSIONS_PER_USER), in
 * one statement (sessions_user_id_idx); how many ended. Expired ones do not count: the janitor
 * deletes those (src/limits/janitor.ts).
 */
export async function deleteSessionsBeyond(db: Db, userId: string, now: Date, keep: number): Promise<number> {
  const result = await sql`
    delete from sessions
    where id_hash in (
      select id_hash from sessions where user_id = ${userId} and expires_at > ${now}
      order by created_at desc, id_hash offset ${keep}
    )`.execute(db)
  return Number(result.numAffectedRows ?? 0)
}
