import { CompiledQuery } from 'kysely'
import type { Db } from '../db/connect.js'
import type { SigningAlg } from '../db/schema.js'

/*
 * The authorization-code exchange's one statement (docs/decisions/007-one-statement-hot-paths.md):
 * it consumes the code in authorization_codes and inserts the token into access_tokens. The
 * codes' other statements are in authorization-codes.ts.
 */

export interface Exchange {
  clientId: string
  /** The confidential client's secret digest; undefined for a public client (client_id alone, RFC 6749 2.1). */
  secretHash: string | undefined
  codeHash: string
  tokenHash: string
  now: Date
  /** As sent to the token endpoint; undefined when absent. */
  redirectUri: string | undefined
  /** The challenge values the sent verifier answers; undefined when no verifier was sent. */
  verifier: { plain: string; s256: string } | undefined
  /** The thumbprint of the key the request's DPoP proof showed (RFC 9449 §5); undefined without a proof. */
  dpopJkt?: string | undefined
  /**
   * RFC 8707: the token's audience, sorted and distinct, within what the code was authorized
   * for; undefined when the request named no resource, and then the token's audience is what the
   * code was authorized for (none, for most codes).
   */
  resources?: string[] | undefined
  /** RESOURCE_TOKEN_TTL_SECONDS_DEFAULT: the lifetime of a token for a resource server that set none. */
  resourceTtlSeconds: number
}

export interface Exchanged {
  user_id: string
  application_id: string
  scopes: string[]
  created_at: Date
  /**
   * The owner's lifetimes (docs/expiring-tokens.md): when the access token expires, the refresh
   * token's lifetime and the code's session, which the caller's second statement starts the
   * family with. All null for an application without lifetimes, whose token lives until revoked.
   */
  expires_at: Date | null
  refresh_token_ttl_seconds: number | null
  sid: string | null
  /** What the ID Token states: null unless the scopes include `openid` (OpenID Connect Core 3.1.3.3). */
  identity: ExchangedIdentity | null
  /** RFC 8707: the token's audience, and what the code was authorized for (a refresh family keeps it); absent without resources. */
  audience?: string[] | null
  granted_resources?: string[] | null
}

/** The code's request and session (CodeIdentity) and the user's claims, read by the exchange's own statement. */
export interface ExchangedIdentity {
  nonce: string | null
  auth_time: Date | null
  amr: string[] | null
  sid: string | null
  id_token_alg: SigningAlg
  email: string
  email_verified: boolean
  name: string | null
  profile_updated_at: Date
}

/**
 * The statement's row. JSON columns come as objects (pg) or text (PGlite), their timestamps as
 * text. The token's expiry, the refresh lifetime and the code's sid are one column, null for an
 * application without lifetimes: the driver describes and builds every column of every row, so
 * the token valid until revoked pays for one null column rather than three.
 */
type ExchangedRow = Omit<Exchanged, 'identity' | 'expires_at' | 'refresh_token_ttl_seconds' | 'sid'> & {
  identity: Record<string, unknown> | string | null
  lifetime: Record<string, unknown> | string | null
}

function fromJson(value: Record<string, unknown> | string): Record<string, unknown> {
  return typeof value === 'string' ? (JSON.parse(value) as Record<string, unknown>) : value
}

function identityOf(value: Record<string, unknown> | string): ExchangedIdentity {
  const identity = fromJson(value)
  return {
    ...(identity as unknown as ExchangedIdentity),
    auth_time: identity.auth_time == null ? null : new Date(identity.auth_time as string),
    profile_updated_at: new Date(identity.profile_updated_at as string),
  }
}

function codeAudience(lifetime: Record<string, unknown> | null): string[] | null {
  return (lifetime?.audience as string[] | null | undefined) ?? null
}

/*
 * The exchange's shapes (redirect_uri sent or not, code_verifier sent or not, a confidential
 * client's secret or a public client's client_id alone), written out once rather than built with
 * Kysely per request, like INSERT_CODE_UNDER_GRANT. Parameters: $1 client_id, then the secret
 * digest when the client is confidential, then now, the code digest, the token digest, then the
 * redirect_uri when sent, then the verifier's plain (confidential only) and S256 values when sent.
 * Comparing digests in SQL is safe where comparing secrets would not be: timing reveals only
 * how much of a SHA-256 output matched, which says nothing about any preimage.
 * A public client (RFC 6749 2.1, docs/decisions/019-public-clients-and-consent.md) is one with no
 * secret, and its code is bound to an S256 challenge only: the verifier stands in for the secret.
 * The statement stays the INSERT … RETURNING it was before ID Tokens: the user's claims are a
 * subquery under CASE, which PostgreSQL evaluates only for a code with `openid`, so a plain
 * exchange joins no user row and builds no JSON (docs/decisions/007-one-statement-hot-paths.md).
 * With a DPoP proof (RFC 9449 §5, §10) the key's thumbprint comes last: the token is bound to it,
 * and a code bound by `dpop_jkt` needs that key. Without one, an application that requires DPoP
 * issues nothing and neither does a bound code; the slow path says which (docs/dpop.md).
 * The owner's access-token lifetime, read from the client row, sets expires_at (null: until
 * revoked); the expiry, the refresh lifetime and the code's sid come back under CASE as one
 * JSON column, so an application without lifetimes pays for one null column (ExchangedRow,
 * docs/expiring-tokens.md).
 * The audience (RFC 8707 §2.2) is the code's own resources without `resource`, null for most
 * codes; with `resource` (its own shape) the identifiers, which must lie within the code's.
 * Either way each must be declared by a resource server that is not suspended, and the token
 * expires with the client's lifetime or else the shortest of theirs; RESOURCE_TOKEN_TTL_SECONDS_DEFAULT
 * comes last (docs/decisions/025-audiences.md).
 */
/**
 * RFC 8707 in the exchange, `sent` the identifiers' parameter when `resource` was sent: the
 * audience (the code's resources, `consumed.resources`, when none was sent), the subset and the
 * servers' check, and the lifetime. A code authorized for none checks only that, and gets its
 * owner's lifetime as before: the statement of a token without an audience is unchanged but
 * for a condition and a null column, with no second statement for a code authorized for some
 * (docs/decisions/007-one-statement-hot-paths.md).
 */
function resourceClauses(sent: string | undefined, defaultTtl: string, now: string) {
  const servers = (identifiers: string) => `resource_identifiers ri join applications ra on ra.id = ri.application_id
      where ri.identifier = any(${identifiers}) and ra.is_resource_server and ra.suspended_at is null`
  const usable = (identifiers: string) => `(select count(*) from ${servers(identifiers)}) = cardinality(${identifiers})`
  const clientTtl = '(select access_token_ttl_seconds from client)'
  const audienceTtl = (identifiers: string) =>
    `${now}::timestamptz + coalesce(${clientTtl},
      (select min(coalesce(ra.resource_token_ttl_seconds, ${defaultTtl})) from ${servers(identifiers)})) * interval '1 second'`
  if (sent === undefined) {
    return {
      audience: 'consumed.resources',
      resourceCheck: `(c.resources is null or ${usable('c.resources')})`,
      expiresAt: `case when consumed.resources is null then ${now}::timestamptz + ${clientTtl} * interval '1 second'
    else ${audienceTtl('consumed.resources')} end`,
    }
  }
  return {
    audience: sent,
    resourceCheck: `(c.resources is null or c.resources @> ${sent})
    and ${usable(sent)}`,
    expiresAt: audienceTtl(sent),
  }
}

function exchangeStatement(
  withRedirect: boolean,
  withVerifier: boolean,
  publicClient: boolean,
  withDpop: boolean,
  withResources: boolean,
): string {
  let n = 1
  const next = () => `$${++n}`
  const clientCheck = publicClient ? 'secret_hash is null' : `secret_hash = ${next()}::text`
  const [now, codeHash, tokenHash] = [next(), next(), next()]
  const redirect = withRedirect ? `${next()}::text` : ''
  // A public client's verifier is sent as its S256 value only (the plain one would be an unused, untyped parameter).
  const plain = withVerifier && !publicClient ? `${next()}::text` : ''
  const s256 = withVerifier ? `${next()}::text` : ''
  const jkt = withDpop ? `${next()}::text` : ''
  const sent = withResources ? `${next()}::text[]` : undefined
  const { audience, resourceCheck, expiresAt } = resourceClauses(sent, `${next()}::int`, now)
  // Without `resource` the audience is the code's, returned in `lifetime`: a token with one always expires.
  const inLifetime = withResources ? '' : ", 'audience', audience"
  const redirectCheck = withRedirect
    ? `(c.redirect_uri = ${redirect} or (c.redirect_uri is null and exists (select 1 from client where ${redirect} = any(client.redirect_uris))))`
    : 'c.redirect_uri is null'
  // RFC 9700 2.1.1: a verifier without a challenge is refused too (PKCE downgrade).
  const pkceCheck = !withVerifier
    ? 'c.code_challenge is null'
    : publicClient
      ? `(c.code_challenge_method = 'S256' and c.code_challenge = ${s256})`
      : `((c.code_challenge_method = 'plain' and c.code_challenge = ${plain}) or (c.code_challenge_method = 'S256' and c.code_challenge = ${s256}))`
  const dpopCheck = withDpop ? `(c.dpop_jkt is null or c.dpop_jkt = ${jkt})` : 'c.dpop_jkt is null'
  return `
with client as (
  select id, redirect_uris, id_token_alg, access_token_ttl_seconds, refresh_token_ttl_seconds from applications
  where client_id = $1::text and ${clientCheck} and suspended_at is null${withDpop ? '' : ' and not require_dpop'}
), consumed as (
  update authorization_codes c set consumed_at = ${now}::timestamptz
  where c.code_hash = ${codeHash}::text and c.consumed_at is null and c.expires_at > ${now}::timestamptz
    and c.application_id = (select id from client)
    and not exists (select 1 from users u where u.id = c.user_id and u.suspended_at is not null)
    and ${redirectCheck}
    and ${pkceCheck}
    and ${dpopCheck}
    and ${resourceCheck}
  returning c.id, c.application_id, c.user_id, c.scopes, c.nonce, c.auth_time, c.amr, c.sid, c.resources
)
insert into access_tokens (token_hash, application_id, user_id, scopes, authorization_code_id, created_at, expires_at${withDpop ? ', dpop_jkt' : ''}, audience)
select ${tokenHash}::text, application_id, user_id, scopes, id, ${now}::timestamptz,
  ${expiresAt}${withDpop ? `, ${jkt}` : ''}, ${audience} from consumed
returning user_id, application_id, scopes, created_at,${withResources ? ' audience, (select resources from consumed) as granted_resources,' : ''}
  case when expires_at is not null then json_build_object(
    'expires_at', expires_at, 'refresh_token_ttl_seconds', (select refresh_token_ttl_seconds from client), 'sid', (select sid from consumed)${inLifetime}
  ) end as lifetime,
  case when 'openid' = any(scopes) then (
    select json_build_object(
      'nonce', c.nonce, 'auth_time', c.auth_time, 'amr', c.amr, 'sid', c.sid, 'id_token_alg', (select id_token_alg from client),
      'email', u.email, 'email_verified', u.email_verified_at is not null, 'name', u.display_name,
      'profile_updated_at', u.profile_updated_at)
    from consumed c join users u on u.id = c.user_id
  ) end as identity`
}

/**
 * By [public client][redirect_uri sent][code_verifier sent][DPoP proof][resource sent]. A public
 * client without a verifier never exchanges.
 */
const EXCHANGE_STATEMENTS = [false, true].map((publicClient) =>
  [false, true].map((withRedirect) =>
    [false, true].map((withVerifier) =>
      [false, true].map((withDpop) =>
        [false, true].map((withResources) => exchangeStatement(withRedirect, withVerifier, publicClient, withDpop, withResources)),
      ),
    ),
  ),
)

/**
 * The whole authorization-code exchange in one statement, so one round trip and no window
 * between check and use: authenticate the client, consume the code only if every binding
 * holds (client, expiry, redirect_uri per RFC 6749 4.1.3, PKCE per RFC 7636 4.6), and insert
 * the token from the consumed row. Concurrent exchanges serialise on the code's row lock and
 * Postgres re-checks `consumed_at is null`, so exactly one of them gets a token. Undefined
 * means "no token"; the caller works out why on a slower path. The grant's live-token quota is
 * kept after the response is decided (src/revocation/token-quota.ts), not here: every plan of
 * the eviction depends on how the grant's tokens are spread, and this statement's plan must not.
 * Uses applications_client_id_key and authorization_codes_code_hash_key, and users_pkey for
 * the user's suspension: a suspension deletes the user's pending codes under their row locks
 * (src/revocation/revoke.ts), so an exchange racing it waits on the code and finds it gone, as
 * for an application's suspension; the check here refuses any code of a suspended user that
 * is still found, without a lock of its own.
 */
export async function consumeCodeAndInsertToken(db: Db, x: Exchange): Promise<Exchanged | undefined> {
  const publicClient = x.secretHash === undefined
  // RFC 7636 4.5 / RFC 9700 2.1.1: a public client proves the code is its own by the verifier alone.
  if (publicClient && x.verifier === undefined) return undefined
  const parameters: unknown[] = [x.clientId, ...(publicClient ? [] : [x.secretHash]), x.now, x.codeHash, x.tokenHash]
  if (x.redirectUri !== undefined) parameters.push(x.redirectUri)
  if (x.verifier !== undefined) parameters.push(...(publicClient ? [] : [x.verifier.plain]), x.verifier.s256)
  if (x.dpopJkt !== undefined) parameters.push(x.dpopJkt)
  if (x.resources !== undefined) parameters.push(x.resources)
  parameters.push(x.resourceTtlSeconds)
  const byShape = EXCHANGE_STATEMENTS[Number(publicClient)]![Number(x.redirectUri !== undefined)]![Number(x.verifier !== undefined)]!
  const statement = byShape[Number(x.dpopJkt !== undefined)]![Number(x.resources !== undefined)]!
  const result = await db.executeQuery<ExchangedRow>(CompiledQuery.raw(statement, parameters))
  const row = result.rows[0]
  if (row === undefined) return undefined
  const lifetime = row.lifetime === null ? null : fromJson(row.lifetime)
  return {
    user_id: row.user_id,
    application_id: row.application_id,
    scopes: row.scopes,
    created_at: row.created_at,
    expires_at: lifetime === null ? null : new Date(lifetime.expires_at as string),
    refresh_token_ttl_seconds: lifetime === null ? null : (lifetime.refresh_token_ttl_seconds as number | null),
    sid: lifetime === null ? null : (lifetime.sid as string | null),
    identity: row.identity === null ? null : identityOf(row.identity),
    // Without `resource` the audience is the code's own resources, in `lifetime`, so that a token
    // without one pays for no further column; the family of a refresh keeps the same.
    ...(x.resources === undefined
      ? { audience: codeAudience(lifetime), granted_resources: codeAudience(lifetime) }
      : { audience: row.audience, granted_resources: row.granted_resources }),
  }
}
