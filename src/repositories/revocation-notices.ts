import { sql } from 'kysely'
import type { Db } from '../db/connect.js'

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
 */
export const REVOCATION_CHANNEL = 'gatehouse_revocations'
export const MAX_DIGESTS_PER_NOTICE = 100

export type RevocationNotice =
  | { kind: 'tokens'; digests: string[] }
  | { kind: 'application'; applicationId: string }
  | { kind: 'user-application'; userId: string; applicationId: string }

export function encodeNotices(notice: RevocationNotice): string[] {
  switch (notice.kind) {
    case 'application':
      return [`app:${notice.applicationId}`]
    case 'user-application':
      return [`user-app:${notice.userId}:${notice.applicationId}`]
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
  const digests = payload.split(',').filter((d) => /^[0-9a-f]{64}$/.test(d))
  return digests.length > 0 ? { kind: 'tokens', digests } : undefined
}

/** Queues the notice(s) in the caller's transaction (or sends at once outside one). */
export async function publishRevocation(db: Db, notice: RevocationNotice): Promise<void> {
  for (const payload of encodeNotices(notice)) {
    await sql`select pg_notify(${REVOCATION_CHANNEL}, ${payload})`.execute(db)
  }
}
