import { LIVE_TOKEN_VIEW } from '@gatehouse/verifier/shared'
import { CompiledQuery, type RawBuilder, sql } from 'kysely'
import type { Db } from '../db/connect.js'
import type { AccessToken } from '../db/schema.js'
import { revokeNewestBeyond } from './newest-beyond.js'

export interface NewAccessToken {
  tokenHash: string
  applicationId: string
  userId: string
  scopes: string[]
  now: Date
  /** RFC 9449 §6: the key the token is bound to; absent for a bearer token. */
  dpopJkt?: string
  /** When the owner chose an access-token lifetime (docs/expiring-tokens.md); absent: until revoked. */
  expiresAt?: Date | undefined
  /** RFC 8707: the resource identifiers the token is for, sorted and distinct; absent: no audience. */
  audience?: string[] | null | undefined
}

/** Inserts a token issued without a code (token flow, device grant). */
export function insertAccessToken(db: Db, t: NewAccessToken): Promise<Pick<AccessToken, 'created_at'>> {
  return db
    .insertInto('access_tokens')
    .values({
      token_hash: t.tokenHash,
      application_id: t.applicationId,
      user_id: t.userId,
      scopes: t.scopes,
      authorization_code_id: null,
      created_at: t.now,
      ...(t.dpopJkt === undefined ? {} : { dpop_jkt: t.dpopJkt }),
      expires_at: t.expiresAt ?? null,
      audience: t.audience ?? null,
    })
    .returning('created_at')
    .executeTakeFirstOrThrow()
}

/**
 * The application of a live token, by digest; undefined for an unknown or dead one. Live as the
 * view that defines it says, for the server as for every verifier (docs/decisions/017-live-token-view.md);
 * the view is inlined, so this is a lookup by access_tokens_token_hash_key.
 */
export async function findLiveTokenApplication(db: Db, tokenHash: string): Promise<string | undefined> {
  const row = await db.selectFrom(LIVE_TOKEN_VIEW).select('application_id').where('token_hash', '=', tokenHash).executeTakeFirst()
  return row?.application_id
}

/** Marks the live tokens exchanged for the code revoked; their digests (access_tokens_authorization_code_id_idx). */
export async function revokeTokensOfCode(db: Db, authorizationCodeId: string, now: Date): Promise<string[]> {
  const rows = await db
    .updateTable('access_tokens')
    .set({ revoked_at: now })
    .where('revoked_at', 'is', null)
    .where('authorization_code_id', '=', authorizationCodeId)
    .returning('token_hash')
    .execute()
  return rows.map((r) => r.token_hash)
}

/** Marks the user's live tokens for the application revoked; their digests (access_tokens_application_user_idx). */
export async function revokeTokensOfGrant(db: Db, grant: GrantKey & { userId: string }, now: Date): Promise<string[]> {
  const rows = await db
    .updateTable('access_tokens')
    .set({ revoked_at: now })
    .where('revoked_at', 'is', null)
    .where('application_id', '=', grant.applicationId)
    .where('user_id', '=', grant.userId)
    .returning('token_hash')
    .execute()
  return rows.map((r) => r.token_hash)
}

/** A (user, application) grant; a null user is a machine application's own tokens (RFC 6749 §4.4). */
export interface GrantKey {
  userId: string | null
  applicationId: string
}

/**
 * Marks the live tokens of each (user, application) beyond its newest `keep` revoked, at most
 * `limit` per grant, and returns their digests: MAX_TOKENS_PER_GRANT (src/revocation/token-quota.ts),
 * read from access_tokens_live_grant_idx (revokeNewestBeyond).
 */
export function revokeTokensBeyond(
  db: Db,
  grants: readonly (GrantKey & { userId: string })[],
  keep: number,
  limit: number,
  now: Date,
  notify?: Parameters<typeof revokeNewestBeyond>[5],
): Promise<string[]> {
  if (grants.length === 0) return Promise.resolve([])
  return revokeNewestBeyond(
    db,
    { table: 'access_tokens', key: 'token_hash' },
    sql`unnest(${grants.map((g) => g.userId)}::uuid[], ${grants.map((g) => g.applicationId)}::uuid[]) as g(user_id, application_id)`,
    sql`user_id = g.user_id and application_id = g.application_id`,
    { keep, limit, now },
    notify,
  )
}

/**
 * As revokeTokensBeyond, for machine applications' own tokens (no user): each application's live
 * machine tokens beyond its newest `keep`, read newest first from access_tokens_live_machine_idx.
 */
export function revokeMachineTokensBeyond(
  db: Db,
  applicationIds: readonly string[],
  keep: number,
  limit: number,
  now: Date,
  notify?: Parameters<typeof revokeNewestBeyond>[5],
): Promise<string[]> {
  if (applicationIds.length === 0) return Promise.resolve([])
  return revokeNewestBeyond(
    db,
    { table: 'access_tokens', key: 'token_hash' },
    sql`unnest(${[...applicationIds]}::uuid[]) as g(application_id)`,
    sql`user_id is null and application_id = g.application_id`,
    { keep, limit, now },
    notify,
  )
}

/**
 * A machine token (RFC 6749 §4.4), in one statement: inserted only while the application is
 * active and its client credentials grant enabled, holding its row FOR KEY SHARE as the code
 * exchange does, so a suspension that locks it FOR UPDATE to revoke either waits for this token
 * and revokes it, or is seen and nothing is issued. Undefined when nothing was issued.
 */
export async function insertMachineToken(
  db: Db,
  t: {
    tokenHash: string
    applicationId: string
    scopes: string[]
    now: Date
    dpopJkt?: string | undefined
    /** RFC 8707: the token's audience and its lifetime in seconds (docs/decisions/025-audiences.md); absent: none. */
    audience?: { identifiers: string[]; ttlSeconds: number } | undefined
  },
): Promise<Pick<AccessToken, 'created_at' | 'expires_at'> | undefined> {
  const audience = t.audience?.identifiers ?? null
  // With an audience the lifetime is decided by the caller; else the owner's, if chosen (docs/expiring-tokens.md); null: until revoked.
  const expiresAt: RawBuilder<Date | null> =
    t.audience === undefined
      ? sql<Date | null>`${t.now}::timestamptz + access_token_ttl_seconds * interval '1 second'`
      : sql<Date | null>`${t.now}::timestamptz + ${t.audience.ttlSeconds}::int * interval '1 second'`
  return db
    .insertInto('access_tokens')
    .columns([
      'token_hash',
      'application_id',
      'user_id',
      'scopes',
      'authorization_code_id',
      'created_at',
      'dpop_jkt',
      'expires_at',
      'audience',
    ])
    .expression(
      db
        .selectFrom('applications')
        .select([
          sql<string>`${t.tokenHash}`.as('token_hash'),
          'id',
          sql<null>`null::uuid`.as('user_id'),
          sql<string[]>`${t.scopes}::text[]`.as('scopes'),
          sql<null>`null::uuid`.as('authorization_code_id'),
          sql<Date>`${t.now}::timestamptz`.as('created_at'),
          // RFC 9449 §6: the key the token is bound to, null for a bearer token.
          sql<string | null>`${t.dpopJkt ?? null}::text`.as('dpop_jkt'),
          expiresAt.as('expires_at'),
          sql<string[] | null>`${audience}::text[]`.as('audience'),
        ])
        .where('id', '=', t.applicationId)
        .where('suspended_at', 'is', null)
        .where('kind', '=', 'machine')
        .where('client_credentials_scopes', 'is not', null)
        .forKeyShare(),
    )
    .returning(['created_at', 'expires_at'])
    .executeTakeFirst()
}

/**
 * Marks at most `limit` live tokens of the application (or only its machine tokens), or of the
 * user for any application, revoked and returns their digests (access_tokens_application_user_idx, access_tokens_user_id_idx),
 * so that revoking a large application or account holds a bounded number of digests in memory
 * at a time. Called until it returns fewer than `limit`.
 */
export async function revokeTokenBatch(
  db: Db,
  owner: { applicationId: string; machineOnly?: boolean } | { userId: string },
  now: Date,
  limit: number,
): Promise<string[]> {
  const rows = await db
    .updateTable('access_tokens')
    .set({ revoked_at: now })
    .where('revoked_at', 'is', null)
    .where((eb) => {
      const live = eb.selectFrom('access_tokens').select('token_hash').where('revoked_at', 'is', null).limit(limit)
      // machineOnly: the application's own tokens (no user), by access_tokens_live_machine_idx.
      const owned =
        'applicationId' in owner
          ? owner.machineOnly
            ? live.where('application_id', '=', owner.applicationId).where('user_id', 'is', null)
            : live.where('application_id', '=', owner.applicationId)
          : live.where('user_id', '=', owner.userId)
      // By the table's key, the digest: `in (…)` may be planned as a hash join over the whole table.
      return sql<boolean>`token_hash = any(array(${owned}))`
    })
    .returning('token_hash')
    .execute()
  return rows.map((r) => r.token_hash)
}

/** Parameters $1 client_id, $2 secret digest (confidential) or null (public: the secret_hash is null), $3 now, $4 token digest, $5 channel. */
const revokeTokenOfClientStatement = (clientCheck: string) => `
with client as (
  select id from applications where client_id = $1 and ${clientCheck} and suspended_at is null
), revoked as (
  update access_tokens set revoked_at = $3
  where token_hash = $4 and revoked_at is null
    and application_id = (select id from client)
  returning token_hash
), notified as (
  select pg_notify($5, token_hash) from revoked
)
select (select count(*)::int from notified) as revoked`

const REVOKE_TOKEN_OF_CLIENT = revokeTokenOfClientStatement('secret_hash = $2')
/** A public client (RFC 6749 2.1) is identified by client_id alone, RFC 7009 2.1; $2 is then unused but typed. */
const REVOKE_TOKEN_OF_PUBLIC_CLIENT = revokeTokenOfClientStatement('secret_hash is null and $2::text is null')

/**
 * RFC 7009 revocation in one statement (one round trip, one commit): authenticate the client
 * by secret digest (a public client by having none), revoke the token only if it is that client's and live, and NOTIFY the
 * revocation channel for the revoked row. NOTIFY is delivered when the statement's implicit
 * transaction commits. False sends the caller to a slower path that explains why. Uses
 * applications_client_id_key and access_tokens_token_hash_key. The text is written once, not
 * built by Kysely per call, as the exchange's is (docs/decisions/007-one-statement-hot-paths.md).
 */
export async function revokeTokenOfClient(
  db: Db,
  x: { clientId: string; secretHash: string | undefined; tokenHash: string; now: Date; channel: string },
): Promise<boolean> {
  const statement = x.secretHash === undefined ? REVOKE_TOKEN_OF_PUBLIC_CLIENT : REVOKE_TOKEN_OF_CLIENT
  const { rows } = await db.executeQuery<{ revoked: number }>(
    CompiledQuery.raw(statement, [x.clientId, x.secretHash ?? null, x.now, x.tokenHash, x.channel]),
  )
  return (rows[0]?.revoked ?? 0) > 0
}
