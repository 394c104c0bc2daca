import { MAX_DIGESTS_PER_NOTICE, REVOCATION_CHANNEL, type RevocationNotice, encodeNotices } from '@gatehouse/verifier/shared'
import type { Db } from '../db/connect.js'
import {
  type GrantKey,
  revokeTokenBatch,
  revokeMachineTokensBeyond,
  revokeTokenOfClient,
  revokeTokensBeyond,
  revokeTokensOfCode,
  revokeTokensOfGrant,
} from '../repositories/access-tokens.js'
import { deletePendingCodes } from '../repositories/authorization-codes.js'
import { deleteGrant, deleteGrantsOfUser } from '../repositories/grants.js'
import {
  revokeFamilies,
  revokeFamiliesBeyond,
  revokeFamiliesById,
  revokeFamiliesOfCode,
  revokeTokensOfFamilies,
} from '../repositories/refresh-tokens.js'
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

/**
 * What happened, which decides what is revoked and what is announced. Only the end of an
 * application (deleted or suspended) ends its revocation streams: the credentials that opened
 * them no longer authenticate. Revoking its tokens alone does not.
 */
export type RevocationTarget =
  /**
   * RFC 7009 at POST /oauth/revoke, in one statement: the client is authenticated by its secret
   * digest and the token revoked only if it is that client's and live. None revoked sends the
   * caller to the slower path that explains why (src/oauth/token/token-revocation.ts).
   */
  | { kind: 'token-of-client'; clientId: string; secretHash: string | undefined; tokenHash: string }
  /** Every token exchanged for this code: the code was presented twice (RFC 6749 4.1.2). */
  | { kind: 'code-replayed'; authorizationCodeId: string }
  /**
   * "Revoke access" by the user, or `gatehouse tokens revoke --user` by an operator: the user's
   * tokens, pending codes and consent for this application.
   */
  | { kind: 'access-revoked'; userId: string; applicationId: string }
  /**
   * Call inside the transaction that deletes the row, after locking it and before deleting it,
   * so the tokens are still there to be listed. Its streams end.
   */
  | { kind: 'application-deleted'; applicationId: string }
  /** Call inside the transaction that suspends it. Its streams end. */
  | { kind: 'application-suspended'; applicationId: string }
  /**
   * A machine application's own tokens (client credentials, RFC 6749 §4.4): its grant was turned
   * off or its scopes changed by the operator, or its secret, on which they were issued, was
   * regenerated (docs/decisions/021-machine-tokens.md). Its users' tokens stay.
   */
  | { kind: 'machine-tokens-revoked'; applicationId: string }
  /** `gatehouse tokens revoke`: every token and pending code of the application; it stays as it is. */
  | { kind: 'application-tokens-revoked'; applicationId: string }
  /**
   * Every token and pending code of one user, whatever the application: a suspended or
   * deleted account (docs/operating/admin.md). Grants stay; deletion removes them.
   */
  | { kind: 'user-suspended'; userId: string }
  | { kind: 'user-deleted'; userId: string }
  /**
   * The account's earlier holders evicted: its grants and open consent requests go too, as
   * "Revoke access" does for one application, whatever the application. The account was claimed
   * by the owner of its address, or its reset asked to revoke every application's access
   * (src/accounts/recovery/recovery.ts, docs/decisions/010-account-recovery.md).
   */
  | { kind: 'user-evicted'; userId: string }
  /**
   * The client's secret regenerated, or its resource-server flag changed: caches of client
   * authentication drop it and its streams end. No token is revoked.
   */
  | { kind: 'client-changed'; clientId: string }
  /**
   * Refresh-token families and their access tokens (docs/expiring-tokens.md): a refresh token
   * revoked at POST /oauth/revoke (RFC 7009 §2.1), or a retired one presented again (RFC 9700
   * §4.14.2).
   */
  | { kind: 'refresh-families'; familyIds: readonly string[] }
  /**
   * Browser sessions ended (log-out, "Log out of all other sessions"): the families their
   * authorizations started, by OpenID Connect `sid`, and those families' access tokens.
   */
  | { kind: 'sessions-ended'; sids: readonly string[] }
  /**
   * Every browser session of a user but one ended on purpose (a password change, "Log out of all
   * other sessions", …): every family the user approved in a session, but the kept session's,
   * with their access tokens — also those of sessions that expired or were evicted before, whose
   * `sid` no session row holds any more.
   */
  | { kind: 'user-sessions-ended'; userId: string; keptSid: string | null }
  /**
   * MAX_TOKENS_PER_GRANT (src/revocation/token-quota.ts): each grant's live tokens beyond its
   * newest `keep`, and its live refresh-token families beyond its newest `keep` with their tokens.
   */
  | {
      kind: 'beyond-quota'
      grants: readonly GrantKey[]
      keep: number
      /** Those of `grants` that started or rotated a refresh-token family since their last check: only theirs can be beyond. */
      withFamilies: readonly GrantKey[]
    }

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

const ofUser = (g: GrantKey): g is GrantKey & { userId: string } => g.userId !== null

/**
 * MAX_TOKENS_PER_GRANT for users' grants, and for machine applications, whose own tokens count
 * as one grant without a user (docs/decisions/021-machine-tokens.md).
 */
async function revokeBeyondQuota(
  trx: Db,
  { grants, keep, withFamilies }: Extract<RevocationTarget, { kind: 'beyond-quota' }>,
  now: Date,
): Promise<string[]> {
  const users = grants.filter(ofUser)
  const machines = grants.filter((g) => g.userId === null).map((g) => g.applicationId)
  // Families first, so that their tokens are not counted twice; machine tokens have none (RFC 6749 §4.4.3).
  // A grant that started no family since its last check has no more live families than then, so
  // bearer-only grants pay for no statement of families (docs/expiring-tokens.md).
  const families = await revokeFamiliesBeyond(trx, withFamilies.filter(ofUser), keep, EVICTIONS_PER_GRANT, now)
  const ofFamilies = await revokeTokensOfFamilies(trx, families, now)
  const digests = [...ofFamilies, ...(await revokeTokensBeyond(trx, users, keep, EVICTIONS_PER_GRANT, now))]
  if (machines.length === 0) return digests
  return [...digests, ...(await revokeMachineTokensBeyond(trx, machines, keep, EVICTIONS_PER_GRANT, now))]
}

/**
 * Revokes the target; idempotent. Returns how many live tokens it revoked (0 for a changed client).
 * RFC 7009's path has a function of its own: suspended at its await, an async function keeps
 * every register of its frame, and this switch's frame is several times that path's (docs/decisions/007-one-statement-hot-paths.md).
 */
export function revoke(ctx: RevocationContext, target: RevocationTarget, now: Date): Promise<number> {
  if (target.kind === 'token-of-client') return revokeTokenOfItsClient(ctx, target, now)
  if (target.kind === 'beyond-quota' && target.withFamilies.length === 0 && !ctx.db.isTransaction) {
    return revokeBeyondQuotaAlone(ctx, target, now)
  }
  return inTransaction(ctx.db, (trx) => revokeInTransaction(trx, ctx.bus, target, now))
}

/**
 * MAX_TOKENS_PER_GRANT when no grant started a refresh-token family since its last check, as
 * with every bearer-only application: each statement (users' grants, machines' own tokens)
 * revokes and NOTIFYs by itself (revokeNewestBeyond), so the quota costs a round trip where a
 * transaction cost four. Each statement is atomic on its own; nothing ties the two together.
 */
async function revokeBeyondQuotaAlone(
  ctx: RevocationContext,
  { grants, keep }: Extract<RevocationTarget, { kind: 'beyond-quota' }>,
  now: Date,
): Promise<number> {
  const notify = { channel: REVOCATION_CHANNEL, perNotice: MAX_DIGESTS_PER_NOTICE }
  const machines = grants.filter((g) => g.userId === null).map((g) => g.applicationId)
  const digests = [
    ...(await revokeTokensBeyond(ctx.db, grants.filter(ofUser), keep, EVICTIONS_PER_GRANT, now, notify)),
    ...(await revokeMachineTokensBeyond(ctx.db, machines, keep, EVICTIONS_PER_GRANT, now, notify)),
  ]
  if (digests.length > 0) ctx.bus.announce({ kind: 'tokens', digests })
  return digests.length
}

/** One statement that NOTIFYs by itself: one round trip, one commit. */
async function revokeTokenOfItsClient(
  ctx: RevocationContext,
  target: Extract<RevocationTarget, { kind: 'token-of-client' }>,
  now: Date,
): Promise<number> {
  const revoked = await revokeTokenOfClient(ctx.db, {
    clientId: target.clientId,
    secretHash: target.secretHash,
    tokenHash: target.tokenHash,
    now,
    channel: REVOCATION_CHANNEL,
  })
  if (!revoked) return 0
  ctx.bus.announce({ kind: 'tokens', digests: [target.tokenHash] })
  return 1
}

/** The digests of the tokens a listed target revokes: the families it ends first, then the tokens. */
async function revokeListed(
  trx: Db,
  target: Extract<
    RevocationTarget,
    { kind: 'code-replayed' | 'beyond-quota' | 'refresh-families' | 'sessions-ended' | 'user-sessions-ended' }
  >,
  now: Date,
): Promise<string[]> {
  switch (target.kind) {
    case 'beyond-quota':
      return revokeBeyondQuota(trx, target, now)
    case 'code-replayed': {
      // RFC 6749 §4.1.2: every token issued from the code, the refreshed ones too.
      const families = await revokeFamiliesOfCode(trx, target.authorizationCodeId, now)
      const digests = await revokeTokensOfCode(trx, target.authorizationCodeId, now)
      return [...digests, ...(await revokeTokensOfFamilies(trx, families, now))]
    }
    case 'refresh-families':
      await revokeFamiliesById(trx, target.familyIds, now)
      // Whatever their state: a family revoked earlier has no live token left, and the update skips revoked ones.
      return revokeTokensOfFamilies(trx, target.familyIds, now)
    case 'sessions-ended':
      return revokeTokensOfFamilies(trx, await revokeFamilies(trx, { sids: target.sids }, now), now)
    case 'user-sessions-ended': {
      const owner = { userId: target.userId, approvedInSessionsBut: target.keptSid }
      return revokeTokensOfFamilies(trx, await revokeFamilies(trx, owner, now), now)
    }
  }
}

async function revokeInTransaction(
  trx: Db,
  bus: RevocationBus,
  target: Exclude<RevocationTarget, { kind: 'token-of-client' }>,
  now: Date,
): Promise<number> {
  switch (target.kind) {
    case 'code-replayed':
    case 'beyond-quota':
    case 'refresh-families':
    case 'sessions-ended':
    case 'user-sessions-ended': {
      const digests = await revokeListed(trx, target, now)
      if (digests.length > 0) await publish(trx, bus, { kind: 'tokens', digests })
      return digests.length
    }
    case 'access-revoked':
      return revokeAccess(trx, bus, target, now)
    case 'application-deleted':
    case 'application-suspended':
    case 'application-tokens-revoked':
      return revokeApplication(trx, bus, target, now)
    case 'user-suspended':
    case 'user-deleted':
    case 'user-evicted':
      return revokeUser(trx, bus, target, now)
    case 'machine-tokens-revoked':
      return revokeInBatches(trx, bus, { applicationId: target.applicationId, machineOnly: true }, now)
    case 'client-changed':
      await publish(trx, bus, { kind: 'client-credentials', clientId: target.clientId })
      return 0
  }
}

/** "Revoke access": one user's grant of one application, its pending codes, families and tokens. */
async function revokeAccess(
  trx: Db,
  bus: RevocationBus,
  target: Extract<RevocationTarget, { kind: 'access-revoked' }>,
  now: Date,
): Promise<number> {
  // The grant first: a code issued under it concurrently (insertCodeUnderGrant locks it)
  // either commits before this statement, and is deleted below, or finds no grant.
  await deleteGrant(trx, target.userId, target.applicationId)
  // Then codes: a code exchanged concurrently either commits before this statement
  // (and its token is revoked below) or finds its row gone.
  await deletePendingCodes(trx, { applicationId: target.applicationId, userId: target.userId })
  // Families before tokens: a refresh holding a family either commits first, and its token
  // is revoked below, or finds the family revoked (src/repositories/refresh-tokens.ts).
  await revokeFamilies(trx, { applicationId: target.applicationId, userId: target.userId }, now)
  const digests = await revokeTokensOfGrant(trx, { userId: target.userId, applicationId: target.applicationId }, now)
  await publish(trx, bus, { kind: 'user-application', userId: target.userId, applicationId: target.applicationId })
  return digests.length
}

/** Every pending code, family and token of an application; its streams end unless it stays. */
async function revokeApplication(
  trx: Db,
  bus: RevocationBus,
  target: Extract<RevocationTarget, { kind: 'application-deleted' | 'application-suspended' | 'application-tokens-revoked' }>,
  now: Date,
): Promise<number> {
  await deletePendingCodes(trx, { applicationId: target.applicationId })
  await revokeFamilies(trx, { applicationId: target.applicationId }, now)
  // The digests, not a reset, so that resource servers drop these tokens only, and no
  // one can empty every verifier's cache by deleting an application (docs/operating/limits.md;
  // docs/decisions/003-revocation-propagation.md). They go out in batches, before the
  // notice that ends the application's own streams, if it has ended.
  const revoked = await revokeInBatches(trx, bus, { applicationId: target.applicationId }, now)
  if (target.kind !== 'application-tokens-revoked') await publish(trx, bus, { kind: target.kind, applicationId: target.applicationId })
  return revoked
}

/** Every pending code, family and token of a user, whatever the application; an eviction takes the grants too. */
async function revokeUser(
  trx: Db,
  bus: RevocationBus,
  target: Extract<RevocationTarget, { kind: 'user-suspended' | 'user-deleted' | 'user-evicted' }>,
  now: Date,
): Promise<number> {
  if (target.kind === 'user-evicted') {
    // Grants first, as for 'access-revoked': a code issued concurrently either
    // commits before this statement, and is deleted below, or finds no grant.
    await deleteGrantsOfUser(trx, target.userId)
    await deletePendingAuthorizationsOfUser(trx, target.userId)
  }
  await deletePendingCodes(trx, { userId: target.userId })
  await revokeFamilies(trx, { userId: target.userId }, now)
  return revokeInBatches(trx, bus, { userId: target.userId }, now)
}
