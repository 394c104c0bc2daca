import type { Db } from '../db/connect.js'

/*
 * The replay cache of DPoP proofs (RFC 9449 §11.1), shared by every process through the
 * database (docs/decisions/024-dpop-replay-cache.md). A row lives until its proof's `iat` could
 * no longer be accepted anyway; the janitor deletes it after that (dpop_proof_jtis_expires_idx).
 */

/**
 * Records a proof by `keyHash` (a digest of its key's thumbprint and its jti) and answers true,
 * or answers false when a proof with that key and jti was recorded before: one statement, so two
 * processes given the same proof at once cannot both accept it. A recorded proof past its expiry
 * counts as unseen (its `iat` refuses it before this is asked) and is recorded again.
 */
export async function rememberProof(db: Db, keyHash: string, expiresAt: Date, now: Date): Promise<boolean> {
  const row = await db
    .insertInto('dpop_proof_jtis')
    .values({ key_hash: keyHash, expires_at: expiresAt })
    .onConflict((oc) => oc.column('key_hash').doUpdateSet({ expires_at: expiresAt }).where('dpop_proof_jtis.expires_at', '<=', now))
    .returning('key_hash')
    .executeTakeFirst()
  return row !== undefined
}
