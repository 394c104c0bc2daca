import { REVOCATION_CHANNEL, type RevocationNotice, encodeNotices } from '@gatehouse/verifier/shared'
import type { Db } from '../db/connect.js'
import {
  type GrantKey,
  revokeAccessTokens,
  revokeTokenBatch,
  revokeTokenOfClient,
  revokeTokensBeyond,
} from '../repositories/access-tokens.js'
import { deletePendingCodes } from '../repositories/authorization-codes.js'
import { deleteGrant, deleteGrantsOfUser } from '../repositories/grants.js'
import { notify } from '../repositories/notifications.js'
import { deletePendingAuthorizationsOfUser } from '../repositories/pending-authorizations.js'
import type { RevocationBus } from './bus.js'

/*
 * The one way anything is revoked (docs/decisions/003-revocation-propagation.md): the
 * revocation endpoint (RFC 7009), a replayed code (RFC 6749 4.1.2), "Revoke access" on
 * Authorized Applications, application deletion, account deletion, and a regenerated client
 * secret. Each marks
 * rows revoked and, in the same transaction, NOTIFYs the revocation channel, so that every
 * cache drops them when (and only if) the transaction commits; this process's own caches hear
 * it through the bus before the response leaves.
 */

export interface RevocationContext {
  /** The database, or the caller's transaction (deletion revokes inside its own). */
  db: Db
  bus: RevocationBus
}

export type RevocationTarget =
  /** One token, only if it belongs to this application (RFC 7009 2.1). */
  | { kind: 'token'; tokenHash: string; applicationId: string }
  /** Every token exchanged for this code: the code was presented twice. */
  | { kind: 'code'; authorizationCodeId: string }
  /** "Revoke access": the user's tokens, pending codes and consent for this application. */
  | { kind: 'user-application'; userId: string; applicationId: string }
  /**
   * Application deletion: call inside the transaction that deletes the row, after locking it
   * and before deleting it, so the tokens are still there to be listed.
   */
  | { kind: 'application'; applicationId: string }
  /**
   * Every token and pending code of one user, whatever the application: a suspended or
   * deleted account (README "Operating Gatehouse"). Grants stay; deletion removes them.
   * `consent`: the grants and open consent requests go too, as "Revoke access" does for one
   * application: the account was claimed by the owner of its address, or its reset asked to
   * revoke every application's access (src/accounts/recovery.ts).
   */
  | { kind: 'user'; userId: string; consent?: boolean }
  /** A regenerated secret: caches of client authentication drop the old one. No token is revoked. */
  | { kind: 'client-credentials'; clientId: string }
  /** MAX_TOKENS_PER_GRANT (src/revocation/token-quota.ts): each grant's live tokens beyond its newest `keep`. */
  | { kind: 'beyond-quota'; grants: readonly GrantKey[]; keep: number }

/**
 * RFC 7009 at POST /oauth/revoke, in one statement: the client is authenticated by its secret
 * digest and the token revoked only if it is that client's and live. `clientOk` false or
 * `revoked` false sends the caller to the slower path that explains why.
 */
export type ClientTokenTarget = { kind: 'token-of-client'; clientId: string; secretHash: string; tokenHash: string }

/** Tokens of a deleted application (or user) revoked per statement: ten notices of MAX_DIGESTS_PER_NOTICE. */
const APPLICATION_REVOCATION_BATCH = 1000

/**
 * A grant's tokens revoked per statement for MAX_TOKENS_PER_GRANT: one in the steady state; a
 * grant left far above the quota by a lowered MAX_TOKENS_PER_GRANT converges over its next issues.
 */
const EVICTIONS_PER_GRANT = 100

/** Runs `fn` in the caller's transaction when there is one, else in a new one. */
function inTransaction<T>(db: Db, fn: (trx: Db) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db) : db.transaction().execute(fn)
}

async function publish(trx: Db, bus: RevocationBus, notice: RevocationNotice): Promise<void> {
  await notify(trx, REVOCATION_CHANNEL, encodeNotices(notice))
  bus.announce(notice)
}

/** Every live token of the application or user, announced by digest a batch at a time; how many. */
async function revokeInBatches(trx: Db, bus: RevocationBus, owner: Parameters<typeof revokeTokenBatch>[1], now: Date): Promise<number> {
  let revoked = 0
  for (;;) {
    const digests = await revokeTokenBatch(trx, owner, now, APPLICATION_REVOCATION_BATCH)
    if (digests.length > 0) await publish(trx, bus, { kind: 'tokens', digests })
    revoked += digests.length
    if (digests.length < APPLICATION_REVOCATION_BATCH) return revoked
  }
}

/** Revokes the target; idempotent. Returns how many tokens were live (0 for credentials). */
export function revoke(ctx: RevocationContext, target: RevocationTarget, now: Date): Promise<number>
export function revoke(ctx: RevocationContext, target: ClientTokenTarget, now: Date): Promise<{ clientOk: boolean; revoked: boolean }>
export async function revoke(
  ctx: RevocationContext,
  target: RevocationTarget | ClientTokenTarget,
  now: Date,
): Promise<number | { clientOk: boolean; revoked: boolean }> {
  if (target.kind === 'token-of-client') {
    // One statement that NOTIFYs by itself: one round trip, one commit.
    const result = await revokeTokenOfClient(ctx.db, { ...target, now, channel: REVOCATION_CHANNEL })
    if (result.revoked) ctx.bus.announce({ kind: 'tokens', digests: [target.tokenHash] })
    return result
  }
  return inTransaction(ctx.db, async (trx) => {
    switch (target.kind) {
      case 'token':
      case 'code':
      case 'beyond-quota': {
        const digests =
          target.kind === 'beyond-quota'
            ? await revokeTokensBeyond(trx, target.grants, target.keep, EVICTIONS_PER_GRANT, now)
            : await revokeAccessTokens(trx, target, now)
        if (digests.length > 0) await publish(trx, ctx.bus, { kind: 'tokens', digests })
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
        await publish(trx, ctx.bus, { kind: 'user-application', userId: target.userId, applicationId: target.applicationId })
        return digests.length
      }
      case 'application': {
        await deletePendingCodes(trx, { applicationId: target.applicationId })
        // The digests, not a reset, so that resource servers drop these tokens only, and no
        // one can empty every verifier's cache by deleting an application (issue 12;
        // docs/decisions/003-revocation-propagation.md). They go out in batches, before the
        // `app:` notice that ends the application's own streams.
        const revoked = await revokeInBatches(trx, ctx.bus, { applicationId: target.applicationId }, now)
        await publish(trx, ctx.bus, { kind: 'application', applicationId: target.applicationId })
        return revoked
      }
      case 'user': {
        if (target.consent) {
          // Grants first, as for 'user-application': a code issued concurrently either
          // commits before this statement, and is deleted below, or finds no grant.
          await deleteGrantsOfUser(trx, target.userId)
          await deletePendingAuthorizationsOfUser(trx, target.userId)
        }
        await deletePendingCodes(trx, { userId: target.userId })
        return revokeInBatches(trx, ctx.bus, { userId: target.userId }, now)
      }
      case 'client-credentials':
        await publish(trx, ctx.bus, target)
        return 0
    }
  })
}
