import { sql } from 'kysely'
import type { DatabaseHandle, Db, ListenEvents } from '../db/connect.js'

/**
 * Revocations are announced on this Postgres channel so that every cache of token validity
 * (in any Gatehouse process, in any database-mode verifier) drops the token within a second
 * (DESIGN.md "/oauth/revoke"). NOTIFY is transactional: the notice is delivered only if the
 * revoking transaction commits.
 *
 * Payloads (each under Postgres' 8000-byte NOTIFY limit):
 *   <digest>,<digest>,…      access-token digests (hex SHA-256), at most MAX_DIGESTS_PER_NOTICE
 *   app:<application uuid>   every token of that application
 *   user-app:<user uuid>:<application uuid>   every token of that user for that application
 *   client:<client_id>       the application's credentials changed (secret regenerated): caches of
 *                            client authentication drop it; no token is revoked
 */
export const REVOCATION_CHANNEL = 'gatehouse_revocations'
export const MAX_DIGESTS_PER_NOTICE = 100

export type RevocationNotice =
  | { kind: 'tokens'; digests: string[] }
  | { kind: 'application'; applicationId: string }
  | { kind: 'user-application'; userId: string; applicationId: string }
  | { kind: 'client-credentials'; clientId: string }

export function encodeNotices(notice: RevocationNotice): string[] {
  switch (notice.kind) {
    case 'application':
      return [`app:${notice.applicationId}`]
    case 'user-application':
      return [`user-app:${notice.userId}:${notice.applicationId}`]
    case 'client-credentials':
      return [`client:${notice.clientId}`]
    case 'tokens': {
      const out: string[] = []
      for (let i = 0; i < notice.digests.length; i += MAX_DIGESTS_PER_NOTICE) {
        out.push(notice.digests.slice(i, i + MAX_DIGESTS_PER_NOTICE).join(','))
      }
      return out
    }
  }
}

export function decodeNotice(payload: string): RevocationNotice | undefined {
  if (payload.startsWith('app:')) return { kind: 'application', applicationId: payload.slice(4) }
  if (payload.startsWith('user-app:')) {
    const [userId, applicationId] = payload.slice(9).split(':')
    return userId && applicationId ? { kind: 'user-application', userId, applicationId } : undefined
  }
  if (payload.startsWith('client:')) {
    const clientId = payload.slice(7)
    return clientId ? { kind: 'client-credentials', clientId } : undefined
  }
  const digests = payload.split(',').filter((d) => /^[0-9a-f]{64}$/.test(d))
  return digests.length > 0 ? { kind: 'tokens', digests } : undefined
}

/**
 * Queues the notice(s) in the caller's transaction (or sends at once outside one), and tells
 * this process's caches at once (see `subscribeRevocations`).
 */
export async function publishRevocation(db: Db, notice: RevocationNotice): Promise<void> {
  for (const payload of encodeNotices(notice)) {
    await sql`select pg_notify(${REVOCATION_CHANNEL}, ${payload})`.execute(db)
  }
  announceLocally(notice)
}

/**
 * Tells this process's caches of a revocation it made itself, at once. For statements that
 * issue their own pg_notify (the one-statement revocation at /oauth/revoke).
 */
export function announceLocally(notice: RevocationNotice): void {
  for (const subscriber of localSubscribers) subscriber(notice, 'local')
}

/**
 * Where a notice came from. `notify`: delivered by Postgres, so the revocation has committed.
 * `local`: published by this process, possibly inside a transaction that has not committed
 * yet; a cache drops the entries at once and keeps results that match the notice out of the
 * cache until the same notice arrives as `notify` (or the revocation rolled back and a few
 * seconds passed). That is how a revocation made through this process is effective here
 * before its response leaves, without waiting for the NOTIFY round trip.
 */
export type NoticeOrigin = 'local' | 'notify'
export type RevocationSubscriber = (notice: RevocationNotice, origin: NoticeOrigin) => void

/*
 * Process-wide on purpose: `publishRevocation` receives a transaction, which cannot be traced
 * back to its database handle. A process normally holds one handle; where it holds several
 * (tests), a local notice reaches the caches of the others too, which only costs them a
 * re-read.
 */
const localSubscribers = new Set<RevocationSubscriber>()

/**
 * Subscribes a cache to every revocation: NOTIFYs from any process on this database, and
 * this process's own publications at once. Resolves once listening; returns the unsubscribe.
 * `events` reports the state of the LISTEN connection (caches fall back to their TTL bound
 * while it is down, and forget everything when it comes back, since notices were missed).
 */
export async function subscribeRevocations(
  database: Pick<DatabaseHandle, 'listen'>,
  subscriber: RevocationSubscriber,
  events?: ListenEvents,
): Promise<() => Promise<void>> {
  const stop = await database.listen(
    REVOCATION_CHANNEL,
    (payload) => {
      const notice = decodeNotice(payload)
      if (notice) subscriber(notice, 'notify')
    },
    events,
  )
  localSubscribers.add(subscriber)
  return async () => {
    localSubscribers.delete(subscriber)
    await stop()
  }
}
