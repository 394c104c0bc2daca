import { CompiledQuery, sql } from 'kysely'
import type { Db } from '../db/connect.js'
import type { GrantKey } from './access-tokens.js'
import { revokeNewestBeyond } from './newest-beyond.js'

/*
 * Refresh tokens and their families (RFC 6749 §6, RFC 9700 §4.14.2; docs/expiring-tokens.md,
 * docs/decisions/023-refresh-token-grace.md). A family is one authorization's chain of rotating
 * refresh tokens; each token is stored as its digest and retired when exchanged. Revoking a
 * family marks it and its access tokens (access_tokens.refresh_family_id) revoked: the callers
 * in src/revocation/revoke.ts announce the digests.
 */

export interface NewFamily {
  applicationId: string
  userId: string
  scopes: string[]
  /** The browser session that approved the authorization (OpenID Connect `sid`), so that ending it ends the family. */
  sid: string | null
  /** RFC 9449 §5: a public client's refresh tokens are bound to the key of its proof. */
  dpopJkt: string | null
  accessTtlSeconds: number
  refreshTtlSeconds: number
  /** RFC 8707: what the authorization was for, which a refresh may narrow; null: no resource named. */
  resources?: string[] | null
  now: Date
  /** now + REFRESH_TOKEN_FAMILY_MAX_DAYS: no rotation extends it. */
  expiresAt: Date
  refreshTokenHash: string
  /** The access token issued with it, which joins the family so that ending the family ends it. */
  accessTokenHash: string
}

/**
 * A family, its first refresh token and the access token's link to it, in one statement: the
 * code exchange's and the device grant's second statement, for applications whose owner chose
 * lifetimes only (src/repositories/code-exchange.ts). The refresh token expires at
 * min(now + refresh lifetime, the family's end). The access token is found by its key,
 * access_tokens_pkey (the digest).
 */
export async function startFamily(db: Db, f: NewFamily): Promise<void> {
  await sql`
    with family as (
      insert into refresh_token_families
        (application_id, user_id, scopes, sid, dpop_jkt, access_token_ttl_seconds, refresh_token_ttl_seconds, created_at, expires_at,
         resources)
      values (${f.applicationId}, ${f.userId}, ${f.scopes}::text[], ${f.sid}, ${f.dpopJkt}, ${f.accessTtlSeconds},
        ${f.refreshTtlSeconds}, ${f.now}, ${f.expiresAt}, ${f.resources ?? null}::text[])
      returning id
    ), first_token as (
      insert into refresh_tokens (token_hash, family_id, created_at, expires_at)
      select ${f.refreshTokenHash}, id, ${f.now}, least(${f.now}::timestamptz + ${f.refreshTtlSeconds} * interval '1 second', ${f.expiresAt})
      from family
    )
    update access_tokens set refresh_family_id = (select id from family) where token_hash = ${f.accessTokenHash}`.execute(db)
}

export interface Rotation {
  clientId: string
  /** The confidential client's secret digest; undefined for a public client (client_id alone). */
  secretHash: string | undefined
  /** The refresh token presented, or, in the grace window, the unused successor it is exchanged through. */
  presentedHash: string
  newRefreshHash: string
  newAccessHash: string
  now: Date
  /** Narrowed scopes, or null for the family's own (RFC 6749 §6). */
  scopes: string[] | null
  /** The proof's key (RFC 9449 §5), or null without a proof. */
  jkt: string | null
  /** RFC 8707: the narrowed audience, sorted and distinct, or null for the family's own. */
  resources?: string[] | null
}

export interface Rotated {
  user_id: string
  application_id: string
  scopes: string[]
  created_at: Date
  expires_at: Date
}

/*
 * The refresh grant's one statement. Parameters: $1 client_id, $2 the secret digest or null (a
 * public client: secret_hash is null), $3 now, $4 the presented digest, $5 the new refresh
 * token's, $6 the new access token's, $7 the narrowed scopes or null, $8 the proof's jkt or null.
 * The access token expires with the family at the latest: the janitor deletes a family at its
 * end, and its tokens with it (access_tokens.refresh_family_id cascades).
 * The application is held FOR KEY SHARE first, as insertMachineToken holds it, so a deletion or
 * suspension that locks it FOR UPDATE waits for this statement or is seen by it, in that order
 * and never the other. The family is locked FOR NO KEY UPDATE: a revocation that marks the
 * family either comes first, and this statement re-reads it revoked and issues nothing, or
 * waits, and its next statement sees the access token inserted here and revokes it. Two
 * presentations of one token serialise on the family, and the second finds it retired.
 * The access token's audience is the family's resources (RFC 8707 §2.2), null for a family
 * authorized for none, each still declared by a usable resource server (a family authorized
 * for none checks nothing more). With `resource` (its own shape, $9 the identifiers) they must
 * lie within the family's and each be declared by a usable resource server.
 */
/**
 * Each of `identifiers` declared by an application still marked a resource server and not
 * suspended (resource_identifiers_pkey): the audience's check, for a narrowed one and for the
 * family's own alike, since a suspended or unmarked server's identifiers are refused until it is
 * usable again (docs/decisions/025-audiences.md).
 */
const usableServers = (
  identifiers: string,
) => `(select count(*) from resource_identifiers ri join applications ra on ra.id = ri.application_id
      where ri.identifier = any(${identifiers}) and ra.is_resource_server and ra.suspended_at is null) = cardinality(${identifiers})`

const rotationStatement = (clientCheck: string, withResources: boolean) => `
with client as (
  select id from applications where client_id = $1::text and ${clientCheck} and suspended_at is null for key share
), family as (
  select f.id, f.user_id, f.application_id, f.scopes, f.access_token_ttl_seconds, f.refresh_token_ttl_seconds, f.expires_at,
    ${withResources ? '$9::text[]' : 'f.resources'} as audience
  from refresh_tokens r join refresh_token_families f on f.id = r.family_id
  where r.token_hash = $4::text and r.retired_at is null and r.expires_at > $3::timestamptz
    and f.application_id = (select id from client) and f.revoked_at is null and f.expires_at > $3::timestamptz
    and (f.dpop_jkt is null or f.dpop_jkt = $8::text)
    and ($7::text[] is null or $7::text[] <@ f.scopes)${
      withResources
        ? `
    and (f.resources is null or f.resources @> $9::text[])
    and ${usableServers('$9::text[]')}`
        : `
    and (f.resources is null or ${usableServers('f.resources')})`
    }
    and not exists (select 1 from users u where u.id = f.user_id and u.suspended_at is not null)
  for no key update of f
), retired as (
  update refresh_tokens r set retired_at = $3::timestamptz
  from family
  where r.token_hash = $4::text and r.retired_at is null and r.family_id = family.id
  returning family.id, family.user_id, family.application_id, family.scopes, family.access_token_ttl_seconds,
    family.refresh_token_ttl_seconds, family.expires_at, family.audience
), successor as (
  insert into refresh_tokens (token_hash, family_id, created_at, expires_at)
  select $5::text, id, $3::timestamptz, least($3::timestamptz + refresh_token_ttl_seconds * interval '1 second', expires_at) from retired
)
insert into access_tokens (token_hash, application_id, user_id, scopes, created_at, expires_at, refresh_family_id, dpop_jkt, audience)
select $6::text, application_id, user_id, coalesce($7::text[], scopes), $3::timestamptz,
  least($3::timestamptz + access_token_ttl_seconds * interval '1 second', expires_at), id, $8::text, audience
from retired
returning user_id, application_id, scopes, created_at, expires_at`

/** By [public client][resource sent]. */
const ROTATIONS = [false, true].map((publicClient) =>
  [false, true].map((withResources) =>
    rotationStatement(publicClient ? 'secret_hash is null and $2::text is null' : 'secret_hash = $2::text', withResources),
  ),
)

/**
 * grant_type=refresh_token in one statement (docs/decisions/007-one-statement-hot-paths.md):
 * authenticate the client, retire the presented refresh token if it is this client's, unexpired,
 * unused and its family live, bound to this proof's key if bound, asked for no scope beyond the
 * family's, and its user not suspended; insert its successor and the new access token. Uses
 * applications_client_id_key, refresh_tokens_pkey, refresh_token_families_pkey and users_pkey.
 * Undefined means nothing was issued; the caller works out why on a slower path.
 */
export async function rotateRefreshToken(db: Db, x: Rotation): Promise<Rotated | undefined> {
  const resources = x.resources ?? null
  const { rows } = await db.executeQuery<Rotated>(
    CompiledQuery.raw(ROTATIONS[Number(x.secretHash === undefined)]![Number(resources !== null)]!, [
      x.clientId,
      x.secretHash ?? null,
      x.now,
      x.presentedHash,
      x.newRefreshHash,
      x.newAccessHash,
      x.scopes,
      x.jkt,
      ...(resources === null ? [] : [resources]),
    ]),
  )
  return rows[0]
}

export interface PresentedRefreshToken {
  family_id: string
  created_at: Date
  expires_at: Date
  retired_at: Date | null
  application_id: string
  user_id: string
  scopes: string[]
  dpop_jkt: string | null
  /** RFC 8707: what the family was authorized for; null: no resource named. */
  resources: string[] | null
  family_expires_at: Date
  family_revoked_at: Date | null
  /** The token created when this one was retired (its successor), if any, and whether it was used. */
  successor_hash: string | null
  successor_retired_at: Date | null
}

/**
 * A refresh token and its family by digest, with its successor: what explains a failed rotation.
 * Uses refresh_tokens_pkey, refresh_token_families_pkey, and refresh_tokens_family_idx
 * (family_id, created_at) for the successor, created when the presented token was retired.
 */
export async function findRefreshToken(db: Db, tokenHash: string): Promise<PresentedRefreshToken | undefined> {
  const { rows } = await sql<PresentedRefreshToken>`
    select r.family_id, r.created_at, r.expires_at, r.retired_at, f.application_id, f.user_id, f.scopes, f.dpop_jkt, f.resources,
      f.expires_at as family_expires_at, f.revoked_at as family_revoked_at,
      s.token_hash as successor_hash, s.retired_at as successor_retired_at
    from refresh_tokens r join refresh_token_families f on f.id = r.family_id
    left join lateral (
      select token_hash, retired_at from refresh_tokens
      where family_id = r.family_id and r.retired_at is not null and created_at = r.retired_at and token_hash <> r.token_hash
      limit 1
    ) s on true
    where r.token_hash = ${tokenHash}`.execute(db)
  return rows[0]
}

/** Whose families a revocation ends. */
export type FamilyOwner =
  | { applicationId: string; userId?: string }
  | { userId: string }
  | { sids: readonly string[] }
  /** The user's families approved in a browser session (a `sid`), but those of the session `keptSid` names. */
  | { userId: string; approvedInSessionsBut: string | null }

/**
 * Marks the owner's live families revoked, holding each FOR NO KEY UPDATE until the caller's
 * transaction ends (see rotationStatement); their ids. Their access tokens are revoked by the
 * caller: by owner they already are, by sid they are not (revokeTokensOfFamilies).
 */
export async function revokeFamilies(db: Db, owner: FamilyOwner, now: Date): Promise<string[]> {
  let q = db.updateTable('refresh_token_families').set({ revoked_at: now }).where('revoked_at', 'is', null)
  if ('sids' in owner) {
    if (owner.sids.length === 0) return []
    q = q.where('sid', '=', sql<string>`any(${[...owner.sids]}::text[])`)
  } else if ('approvedInSessionsBut' in owner) {
    q = q.where('user_id', '=', owner.userId).where('sid', 'is not', null)
    if (owner.approvedInSessionsBut !== null) q = q.where('sid', '!=', owner.approvedInSessionsBut)
  } else {
    if ('applicationId' in owner) q = q.where('application_id', '=', owner.applicationId)
    if (owner.userId !== undefined) q = q.where('user_id', '=', owner.userId)
  }
  const rows = await q.returning('id').execute()
  return rows.map((r) => r.id)
}

/** Marks the families by id revoked, whatever their state; those that were live. */
export async function revokeFamiliesById(db: Db, familyIds: readonly string[], now: Date): Promise<string[]> {
  if (familyIds.length === 0) return []
  const rows = await db
    .updateTable('refresh_token_families')
    .set({ revoked_at: now })
    .where('revoked_at', 'is', null)
    .where('id', '=', sql<string>`any(${[...familyIds]}::uuid[])`)
    .returning('id')
    .execute()
  return rows.map((r) => r.id)
}

/** The families that access tokens exchanged for the code belong to (RFC 6749 §4.1.2: a replayed code). */
export async function revokeFamiliesOfCode(db: Db, authorizationCodeId: string, now: Date): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`
    update refresh_token_families set revoked_at = ${now}
    where revoked_at is null and id = any(array(
      select refresh_family_id from access_tokens where authorization_code_id = ${authorizationCodeId} and refresh_family_id is not null
    ))
    returning id`.execute(db)
  return rows.map((r) => r.id)
}

/** Marks the live access tokens of the families revoked (access_tokens_refresh_family_idx); their digests. */
export async function revokeTokensOfFamilies(db: Db, familyIds: readonly string[], now: Date): Promise<string[]> {
  if (familyIds.length === 0) return []
  const rows = await db
    .updateTable('access_tokens')
    .set({ revoked_at: now })
    .where('revoked_at', 'is', null)
    .where('refresh_family_id', '=', sql<string>`any(${[...familyIds]}::uuid[])`)
    .returning('token_hash')
    .execute()
  return rows.map((r) => r.token_hash)
}

/**
 * MAX_TOKENS_PER_GRANT for families: each grant's live, unexpired families beyond its newest
 * `keep`, at most `limit` per grant, marked revoked (refresh_token_families_grant_idx); their ids.
 */
export function revokeFamiliesBeyond(
  db: Db,
  grants: readonly (GrantKey & { userId: string })[],
  keep: number,
  limit: number,
  now: Date,
): Promise<string[]> {
  if (grants.length === 0) return Promise.resolve([])
  return revokeNewestBeyond(
    db,
    { table: 'refresh_token_families', key: 'id' },
    sql`unnest(${grants.map((g) => g.userId)}::uuid[], ${grants.map((g) => g.applicationId)}::uuid[]) as g(user_id, application_id)`,
    sql`user_id = g.user_id and application_id = g.application_id and expires_at > ${now}`,
    { keep, limit, now },
  )
}
