/**
 * Revocation notices (docs/decisions/003-revocation-propagation.md): what Gatehouse announces on
 * a Postgres channel when tokens stop being valid, so that every cache of token validity (in
 * any Gatehouse process, in any database-mode verifier) drops them within a second. NOTIFY is
 * transactional: a notice is delivered only if the revoking transaction commits.
 *
 * Payloads (each under Postgres' 8000-byte NOTIFY limit):
 *   <digest>,<digest>,…      access-token digests (hex SHA-256), at most MAX_DIGESTS_PER_NOTICE
 *   app-deleted:<application uuid>     the application was deleted: its credentials no longer
 *   app-suspended:<application uuid>   authenticate, its revocation streams end, and every token
 *                                      of it is revoked (their digests were announced before)
 *   user-app:<user uuid>:<application uuid>   every token of that user for that application
 *   client:<client_id>       the application's credentials changed (secret regenerated): caches of
 *                            client authentication drop it; no token is revoked
 */
export const REVOCATION_CHANNEL = 'gatehouse_revocations'
export const MAX_DIGESTS_PER_NOTICE = 100

export type RevocationNotice =
  | { kind: 'tokens'; digests: string[] }
  | { kind: 'application-deleted'; applicationId: string }
  | { kind: 'application-suspended'; applicationId: string }
  | { kind: 'user-application'; userId: string; applicationId: string }
  | { kind: 'client-credentials'; clientId: string }

/**
 * Where a notice came from. `notify`: delivered by Postgres, so the revocation has committed.
 * `local`: published by this process, possibly inside a transaction that has not committed
 * yet; a cache drops the entries at once and keeps results that match the notice out of the
 * cache until the same notice arrives as `notify` (or the revocation rolled back and a few
 * seconds passed). That is how a revocation made through a process is effective there
 * before its response leaves, without waiting for the NOTIFY round trip.
 */
export type NoticeOrigin = 'local' | 'notify'

export function encodeNotices(notice: RevocationNotice): string[] {
  switch (notice.kind) {
    case 'application-deleted':
      return [`app-deleted:${notice.applicationId}`]
    case 'application-suspended':
      return [`app-suspended:${notice.applicationId}`]
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
  if (payload.startsWith('app-deleted:')) return { kind: 'application-deleted', applicationId: payload.slice(12) }
  if (payload.startsWith('app-suspended:')) return { kind: 'application-suspended', applicationId: payload.slice(14) }
  // Published by a Gatehouse from before the two were told apart, during a rolling upgrade.
  if (payload.startsWith('app:')) return { kind: 'application-deleted', applicationId: payload.slice(4) }
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
