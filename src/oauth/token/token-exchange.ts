import { sha256Hex } from '../../lib/crypto.js'
import { generateAccessToken } from '../../lib/tokens.js'
import { revoke } from '../../revocation/revoke.js'
import type { TokenQuota } from '../../revocation/token-quota.js'
import { findCodeByHash } from '../../repositories/authorization-codes.js'
import { type Exchanged, consumeCodeAndInsertToken } from '../../repositories/code-exchange.js'
import {
  type ClientCredentials,
  type ClientEndpointContext,
  authenticateClient,
  extractClientCredentials,
  refuseUnknownMetadataClient,
} from './client-auth.js'
import { issueClientCredentialsToken } from './client-credentials.js'
import { InvalidDpopProofError, InvalidGrantError, InvalidRequestError, InvalidTargetError, UnsupportedGrantTypeError } from '../errors.js'
import { optional, type Params, required } from '../params.js'
import { computeS256Challenge, isValidVerifier, verifyCodeVerifier } from './pkce.js'
import { type ScopeVocabulary, formatScope } from '../grants/scope.js'
import { type IdTokenIssuer, issueIdToken } from '../identity/id-token.js'
import type { DpopBinding } from '../dpop/binding.js'
import { type ExpiringTokenFields, type RefreshContext, refreshAccessToken, startRefreshFamily } from './refresh-grant.js'
import { type ResourceSettings, parseResources, resourceTargets, withinAuthorized } from '../resources/resource-indicators.js'

/**
 * Successful token response (RFC 6749 5.1). No expires_in unless the application's owner chose
 * lifetimes: then expires_in and a refresh_token (docs/expiring-tokens.md); else tokens live until revoked.
 */
export interface TokenResponse {
  access_token: string
  /** RFC 9449 §5: `DPoP` for a token bound to the key of the request's proof. */
  token_type: 'Bearer' | 'DPoP'
  scope: string
  /** Seconds since the epoch, as Doorkeeper reports it. */
  created_at: number
  /** OpenID Connect Core 3.1.3.3: when the scopes include `openid`. */
  id_token?: string
  expires_in?: number
  refresh_token?: string
}

/**
 * The grant types POST /oauth/token answers (RFC 6749 4.1.3, 4.4.2), as the RFC 8414 metadata lists them
 * (src/oauth/use-cases.ts adds `implicit`, which GET /oauth/authorize answers).
 */
export const TOKEN_GRANT_TYPES = ['authorization_code', 'client_credentials', 'refresh_token'] as const

/**
 * POST /oauth/token, grant_type=authorization_code (RFC 6749 4.1.3). The common case is one
 * SQL statement; only a failed exchange pays for the queries that explain the failure.
 */
export async function exchangeAuthorizationCode(
  ctx: ClientEndpointContext &
    RefreshContext & {
      tokenQuota: Pick<TokenQuota, 'issued'>
      idTokens: IdTokenIssuer
      scopes: ScopeVocabulary
      resources: ResourceSettings
    },
  params: Params,
  authorization: string | undefined,
  dpop?: DpopBinding,
  sentResources: readonly string[] = [],
): Promise<TokenResponse> {
  const creds = extractClientCredentials(params, authorization)
  // The code and refresh statements read the client themselves: a metadata client unknown now is refused first.
  refuseUnknownMetadataClient(creds, ctx.metadataHosts)
  const grantType = required(params, 'grant_type')
  const resources = await resourcesOfClient(ctx, creds, sentResources)
  if (grantType === 'client_credentials') return issueClientCredentialsToken(ctx, creds, params, dpop, resources)
  if (grantType === 'refresh_token') return refreshAccessToken(ctx, creds, params, dpop, resources)
  if (grantType !== 'authorization_code') {
    throw new UnsupportedGrantTypeError(
      'Only grant_type=authorization_code, grant_type=client_credentials and grant_type=refresh_token are supported',
    )
  }
  const code = required(params, 'code')
  const redirectUri = optional(params, 'redirect_uri')
  const verifier = optional(params, 'code_verifier')
  if (verifier !== undefined && !isValidVerifier(verifier)) {
    throw new InvalidRequestError('code_verifier must be 43-128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636 4.1)')
  }

  const now = ctx.clock()
  const token = generateAccessToken()
  const codeHash = sha256Hex(code)
  const tokenHash = sha256Hex(token)
  const exchange = (identifiers: string[] | null) =>
    consumeCodeAndInsertToken(ctx.db, {
      clientId: creds.clientId,
      secretHash: creds.clientSecret === undefined ? undefined : sha256Hex(creds.clientSecret),
      codeHash,
      tokenHash,
      now,
      redirectUri,
      verifier: verifier === undefined ? undefined : { plain: verifier, s256: computeS256Challenge(verifier) },
      dpopJkt: dpop?.jkt,
      resources: identifiers ?? undefined,
      resourceTtlSeconds: ctx.resources.defaultTtlSeconds,
    })
  const issued = await exchange(resources)
  if (!issued) throw await explainFailure(ctx, creds, codeHash, { redirectUri, verifier, dpop, resources }, now)
  return tokenResponse(ctx, issued, { token, tokenHash, creds, dpop, now })
}

/**
 * RFC 8707 §2: the form of each `resource`, checked before anything is read. A malformed one is
 * answered only once the client is authenticated (RFC 6749 §5.2: invalid_client comes first, so
 * a wrong secret never learns anything else); the statements of the grants authenticate it
 * themselves, so this costs a read only when `resource` is malformed.
 */
async function resourcesOfClient(ctx: ClientEndpointContext, creds: ClientCredentials, sent: readonly string[]): Promise<string[] | null> {
  try {
    return parseResources(sent)
  } catch (err) {
    if (err instanceof InvalidTargetError) await authenticateClient(ctx.db, ctx.clock, creds, ctx.clientAuthFailureLimit, ctx.metadataHosts)
    throw err
  }
}

/** RFC 6749 5.1 for an exchanged code: expiring fields and the ID Token when they apply. */
async function tokenResponse(
  ctx: Parameters<typeof exchangeAuthorizationCode>[0],
  issued: Exchanged,
  x: { token: string; tokenHash: string; creds: ClientCredentials; dpop: DpopBinding | undefined; now: Date },
): Promise<TokenResponse> {
  const family = issued.expires_at !== null && issued.refresh_token_ttl_seconds !== null
  ctx.tokenQuota.issued({ userId: issued.user_id, applicationId: issued.application_id }, family)
  const response: TokenResponse = {
    access_token: x.token,
    token_type: x.dpop === undefined ? 'Bearer' : 'DPoP',
    scope: formatScope(ctx.scopes.normalize(issued.scopes)),
    created_at: Math.floor(issued.created_at.getTime() / 1000),
  }
  const publicClient = x.creds.clientSecret === undefined
  if (issued.expires_at !== null) Object.assign(response, await expiringFields(ctx, issued, publicClient, x.tokenHash, x.dpop))
  if (issued.identity) {
    response.id_token = await issueIdToken(
      ctx.idTokens,
      { user_id: issued.user_id, identity: issued.identity },
      x.creds.clientId,
      x.token,
      x.now,
    )
  }
  return response
}

/**
 * The owner chose lifetimes: expires_in, and the refresh token of a family started in this grant's
 * second statement (docs/expiring-tokens.md). RFC 9449 §5: a public client's family is bound to
 * the key of the request's proof.
 */
async function expiringFields(
  ctx: Pick<RefreshContext, 'db' | 'refresh'>,
  issued: Exchanged,
  publicClient: boolean,
  accessTokenHash: string,
  dpop: DpopBinding | undefined,
): Promise<ExpiringTokenFields> {
  const expiresAt = issued.expires_at!
  if (issued.refresh_token_ttl_seconds === null) {
    return { expires_in: Math.round((expiresAt.getTime() - issued.created_at.getTime()) / 1000) }
  }
  const dpopJkt = publicClient ? (dpop?.jkt ?? null) : null
  // RFC 8707 §2.2: the family keeps what the code was authorized for, which each refresh may narrow.
  const resources = issued.granted_resources ?? null
  const x = { accessTokenHash, refreshTtlSeconds: issued.refresh_token_ttl_seconds, sid: issued.sid, dpopJkt, resources }
  return startRefreshFamily(ctx, { ...issued, expires_at: expiresAt }, x)
}

/**
 * Why the one-statement exchange issued nothing, checked in RFC order: client, then grant, then
 * the resources (RFC 8707 §2): those sent, or without `resource` the code's own.
 */
async function explainFailure(
  ctx: ClientEndpointContext,
  creds: Parameters<typeof authenticateClient>[2],
  codeHash: string,
  sent: { redirectUri: string | undefined; verifier: string | undefined; dpop: DpopBinding | undefined; resources: string[] | null },
  now: Date,
): Promise<Error> {
  const application = await authenticateClient(ctx.db, ctx.clock, creds, ctx.clientAuthFailureLimit, ctx.metadataHosts)
  // RFC 9449 §5.2 `dpop_bound_access_tokens`: the code stays unused, for a retry with a proof.
  if (application.require_dpop && sent.dpop === undefined) {
    return new InvalidDpopProofError('This application requires DPoP: send a DPoP proof with the token request')
  }
  const row = await findCodeByHash(ctx.db, codeHash)
  // A code of another client is "invalid" to this one, never evidence of its replay.
  if (!row || row.application_id !== application.id) return new InvalidGrantError('The authorization code is invalid')
  if (row.consumed_at !== null) {
    // RFC 6749 4.1.2 / 10.5: a code used twice may have leaked; revoke what it produced.
    await revoke(ctx, { kind: 'code-replayed', authorizationCodeId: row.id }, now)
    return new InvalidGrantError('The authorization code has already been used; tokens issued from it are revoked')
  }
  if (row.expires_at.getTime() <= now.getTime()) return new InvalidGrantError('The authorization code has expired')
  if (row.redirect_uri !== null && sent.redirectUri === undefined) {
    return new InvalidGrantError('redirect_uri is required: the authorization request included one')
  }
  if (sent.redirectUri !== undefined && row.redirect_uri !== sent.redirectUri) {
    if (row.redirect_uri !== null || !application.redirect_uris.includes(sent.redirectUri)) {
      return new InvalidGrantError('redirect_uri does not match the one in the authorization request')
    }
  }
  if (row.code_challenge === null && sent.verifier !== undefined) {
    return new InvalidGrantError('code_verifier was sent but the authorization request had no code_challenge')
  }
  if (row.code_challenge !== null && sent.verifier === undefined) return new InvalidGrantError('code_verifier is required')
  if (row.code_challenge !== null && !verifyCodeVerifier(sent.verifier!, row.code_challenge, row.code_challenge_method ?? 'plain')) {
    return new InvalidGrantError('code_verifier does not match the code_challenge')
  }
  // RFC 9449 §10: a code bound by dpop_jkt is exchanged only with a proof of that key.
  if (row.dpop_jkt !== null && row.dpop_jkt !== sent.dpop?.jkt) {
    return new InvalidGrantError('The authorization code is bound to another DPoP key (dpop_jkt)')
  }
  // RFC 8707 §2.2: narrower than what was authorized, never wider; and each still a usable resource server's.
  if (sent.resources !== null && !withinAuthorized(sent.resources, row.resources)) {
    return new InvalidTargetError('A requested resource was not part of the authorization')
  }
  const audience = sent.resources ?? row.resources
  if (audience !== null) {
    try {
      await resourceTargets(ctx.db, audience)
    } catch (err) {
      if (err instanceof InvalidTargetError) return err
      throw err
    }
  }
  // Every binding holds now, so something changed between the two statements (e.g. the
  // client's secret was regenerated): refuse rather than guess.
  return new InvalidGrantError('The authorization code is invalid')
}
