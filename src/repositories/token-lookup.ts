import type { Db } from '../db/connect.js'

/**
 * Digests of the revoked tokens of one user for one application, for "Revoke access" notices
 * sent to resource servers that only know tokens by digest (access_tokens_application_user_idx).
 * At most `limit` rows: beyond that, the caller resets its subscribers instead.
 */
export async function findRevokedDigests(db: Db, userId: string, applicationId: string, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('access_tokens')
    .select('token_hash')
    .where('application_id', '=', applicationId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is not', null)
    .limit(limit)
    .execute()
  return rows.map((r) => r.token_hash)
}
