import type { Db } from '../db/connect.js'
import { revokeAccessTokens } from '../repositories/access-tokens.js'
import { deletePendingCodes } from '../repositories/authorization-codes.js'
import { deleteGrant } from '../repositories/grants.js'
import { publishRevocation } from '../repositories/revocation-notices.js'

/*
 * The one way tokens are revoked: the revocation endpoint (RFC 7009), a replayed code
 * (RFC 6749 4.1.2), "Revoke access" on Authorized Applications, and application deletion.
 * Each marks rows revoked and, in the same transaction, NOTIFYs `gatehouse_revocations` so
 * that every token cache drops them when (and only if) the transaction commits.
 *
 * Payloads on the channel (see src/repositories/revocation-notices.ts, each < 8000 bytes):
 *   `<digest>,<digest>,…`                     hex SHA-256 token digests, chunked
 *   `app:<application uuid>`                  every token of the application
 *   `user-app:<user uuid>:<application uuid>` every token of that user for that application
 */
export type RevocationTarget =
  /** One token, only if it belongs to this application (RFC 7009 2.1). */
  | { kind: 'token'; tokenHash: string; applicationId: string }
  /** Every token exchanged for this code: the code was presented twice. */
  | { kind: 'code'; authorizationCodeId: string }
  /** "Revoke access": the user's tokens, pending codes and consent for this application. */
  | { kind: 'user-application'; userId: string; applicationId: string }
  /** Application deletion: call inside the transaction that deletes the row. */
  | { kind: 'application'; applicationId: string }

/** Runs `fn` in the caller's transaction when there is one, else in a new one. */
function inTransaction<T>(db: Db, fn: (trx: Db) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db) : db.transaction().execute(fn)
}

/** Revokes the target's live tokens; returns how many were live. Idempotent. */
export function revokeTokens(db: Db, target: RevocationTarget, now: Date): Promise<number> {
  return inTransaction(db, async (trx) => {
    switch (target.kind) {
      case 'token':
      case 'code': {
        const digests = await revokeAccessTokens(trx, target, now)
        if (digests.length > 0) await publishRevocation(trx, { kind: 'tokens', digests })
        return digests.length
      }
      case 'user-application': {
        // The grant first: a code issued under it concurrently (insertCodeUnderGrant locks it)
        // either commits before this statement, and is deleted below, or finds no grant.
        await deleteGrant(trx, target.userId, target.applicationId)
        // Then codes: a code exchanged concurrently either commits before this statement
        // (and its token is revoked below) or finds its row gone.
        await deletePendingCodes(trx, { applicationId: target.applicationId, userId: target.userId })
        const digests = await revokeAccessTokens(trx, { userId: target.userId, applicationId: target.applicationId }, now)
        await publishRevocation(trx, { kind: 'user-application', userId: target.userId, applicationId: target.applicationId })
        return digests.length
      }
      case 'application': {
        await deletePendingCodes(trx, { applicationId: target.applicationId })
        const digests = await revokeAccessTokens(trx, { applicationId: target.applicationId }, now)
        await publishRevocation(trx, { kind: 'application', applicationId: target.applicationId })
        return digests.length
      }
    }
  })
}
