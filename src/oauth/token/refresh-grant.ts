import type { AuditLog } from '../../audit/audit-log.js'
import { sha256Hex } from '../../lib/crypto.js'
import { generateAccessToken, generateRefreshToken } from '../../lib/tokens.js'
import { isWellFormedRefreshToken } from '@gatehouse/verifier/shared'
import { type PresentedRefreshToken, findRefreshToken, rotateRefreshToken, startFamily } from '../../repositories/refresh-tokens.js'
import { revoke } from '../../revocation/revoke.js'
import type { TokenQuota } from '../../revocation/token-quota.js'
import type { Application } from '../../db/schema.js'
import type { DpopBinding } from '../dpop/binding.js'
import { InvalidDpopProofError, InvalidGrantError, InvalidScopeError, InvalidTargetError } from '../errors.js'
import { resourceTargets, withinAuthorized } from '../resources/resource-indicators.js'
import { type ScopeVocabulary, formatScope } from '../grants/scope.js'
import { type Params, optional, required } from '../params.js'
import { type ClientCredentials, type ClientEndpointContext, authenticateClient } from './client-auth.js'

/*
 * POST /oauth/token, grant_type=refresh_token (RFC 6749 §6) with rotation (RFC 9700 §4.14.2,
 * OAuth 2.1 §4.3.1): every refresh answers a new access token and a new refresh token and retires
 * the one presented. A retired one presented again is reuse, and ends the whole family, except
 * once within REFRESH_TOKEN_REUSE_GRACE_SECONDS while its successor is unused: the answer that
 * carried the successor was lost in flight (docs/decisions/023-refresh-token-grace.md).
 */

/** REFRESH_TOKEN_FAMILY_MAX_DAYS and REFRESH_TOKEN_REUSE_GRACE_SECONDS (docs/expiring-tokens.md). */
export interface RefreshSettings {
  readonly familyMaxSeconds: number
  readonly reuseGraceSeconds: number
}

export type RefreshContext = ClientEndpointContext & {
  tokenQuota: Pick<TokenQuota, 'issued'>
  scopes: ScopeVocabulary
  refresh: RefreshSettings
  audit: Pick<AuditLog, 'record'>
}

/** What a response adds for an application with lifetimes (RFC 6749 §5.1). */
export interface ExpiringTokenFields {
  expires_in: number
  refresh_token?: string
}

/**
 * The family of an access token just issued with an expiry (the code exchange, the device
 * grant): its first refresh token, in the issuing grant's second statement. `dpopJkt` binds the
 * family when the client is public and sent a proof (RFC 9449 §5).
 */
export async function startRefreshFamily(
  ctx: Pick<RefreshContext, 'db' | 'refresh'>,
  issued: { user_id: string; application_id: string; scopes: string[]; created_at: Date; expires_at: Date },
  x: { accessTokenHash: string; refreshTtlSeconds: number; sid: string | null; dpopJkt: string | null; resources?: string[] | null },
): Promise<ExpiringTokenFields> {
  const refreshToken = generateRefreshToken()
  const now = issued.created_at
  const accessTtlSeconds = Math.round((issued.expires_at.getTime() - now.getTime()) / 1000)
  await startFamily(ctx.db, {
    applicationId: issued.application_id,
    userId: issued.user_id,
    scopes: issued.scopes,
    sid: x.sid,
    dpopJkt: x.dpopJkt,
    accessTtlSeconds,
    refreshTtlSeconds: x.refreshTtlSeconds,
    resources: x.resources ?? null,
    now,
    expiresAt: new Date(now.getTime() + ctx.refresh.familyMaxSeconds * 1000),
    refreshTokenHash: sha256Hex(refreshToken),
    accessTokenHash: x.accessTokenHash,
  })
  return { expires_in: accessTtlSeconds, refresh_token: refreshToken }
}

/** RFC 6749 §5.1 for a refresh: a new pair; `token_type` DPoP when the access token is bound (RFC 9449 §5). */
export interface RefreshResponse {
  access_token: string
  token_type: 'Bearer' | 'DPoP'
  scope: string
  created_at: number
  expires_in: number
  refresh_token: string
}

export async function refreshAccessToken(
  ctx: RefreshContext,
  creds: ClientCredentials,
  params: Params,
  dpop: DpopBinding | undefined,
  resources: string[] | null = null,
): Promise<RefreshResponse> {
  const presented = required(params, 'refresh_token')
  const scopes = narrowedScopes(ctx.scopes, optional(params, 'scope'))
  const now = ctx.clock()
  const presentedHash = sha256Hex(presented)
  if (isWellFormedRefreshToken(presented)) {
    const answer = await rotate(ctx, creds, { presentedHash, scopes, jkt: dpop?.jkt ?? null, now, resources })
    if (answer) return answer
  }
  return explainFailure(ctx, creds, { presentedHash, scopes, dpop, now, resources })
}

/** RFC 6749 §6: `scope` may narrow the grant, never widen it; absent, the family's own scopes. */
function narrowedScopes(vocabulary: ScopeVocabulary, raw: string | undefined): string[] | null {
  if (raw === undefined || raw.trim() === '') return null
  return vocabulary.parse(raw)
}

interface Attempt {
  presentedHash: string
  scopes: string[] | null
  jkt: string | null
  now: Date
  /** RFC 8707 §2.2: the narrowed audience (parseResources' output), or null for the family's own. */
  resources: string[] | null
}

/** The one statement, and the response it allows; undefined when it issued nothing. */
async function rotate(ctx: RefreshContext, creds: ClientCredentials, a: Attempt): Promise<RefreshResponse | undefined> {
  const accessToken = generateAccessToken()
  const refreshToken = generateRefreshToken()
  const rotated = await rotateRefreshToken(ctx.db, {
    clientId: creds.clientId,
    secretHash: creds.clientSecret === undefined ? undefined : sha256Hex(creds.clientSecret),
    presentedHash: a.presentedHash,
    newRefreshHash: sha256Hex(refreshToken),
    newAccessHash: sha256Hex(accessToken),
    now: a.now,
    scopes: a.scopes,
    jkt: a.jkt,
    resources: a.resources,
  })
  if (!rotated) return undefined
  ctx.tokenQuota.issued({ userId: rotated.user_id, applicationId: rotated.application_id }, true)
  return {
    access_token: accessToken,
    token_type: a.jkt === null ? 'Bearer' : 'DPoP',
    scope: formatScope(ctx.scopes.normalize(rotated.scopes)),
    created_at: Math.floor(rotated.created_at.getTime() / 1000),
    expires_in: Math.round((rotated.expires_at.getTime() - rotated.created_at.getTime()) / 1000),
    refresh_token: refreshToken,
  }
}

/**
 * Why the statement issued nothing, in RFC order: the client, then the grant. A retired token is
 * the grace window's second chance or reuse. A refresh token of another client is "invalid" to
 * this one, never evidence of its theft: only its own client can reuse it.
 */
async function explainFailure(
  ctx: RefreshContext,
  creds: ClientCredentials,
  a: Omit<Attempt, 'jkt'> & { dpop: DpopBinding | undefined },
): Promise<RefreshResponse> {
  const application = await authenticateClient(ctx.db, ctx.clock, creds, ctx.clientAuthFailureLimit, ctx.metadataHosts)
  const row = await findRefreshToken(ctx.db, a.presentedHash)
  if (!row || row.application_id !== application.id) throw new InvalidGrantError('The refresh token is invalid')
  if (row.family_revoked_at !== null) throw new InvalidGrantError('The refresh token was revoked')
  if (row.dpop_jkt !== null && row.dpop_jkt !== a.dpop?.jkt) {
    // RFC 9449 §5: the binding is checked at every refresh; the client is told to prove the key.
    throw new InvalidDpopProofError('This refresh token is bound to a DPoP key: send a DPoP proof signed with that key')
  }
  const beyond = a.scopes?.find((s) => !row.scopes.includes(s))
  if (beyond !== undefined) throw new InvalidScopeError(`The scope ${beyond} was not granted to this refresh token`)
  if (a.resources !== null) {
    // RFC 8707 §2.2: a refresh may narrow the audience, never widen it, to resource servers still usable.
    if (!withinAuthorized(a.resources, row.resources))
      throw new InvalidTargetError('A requested resource was not part of the authorization')
    await resourceTargets(ctx.db, a.resources)
  } else if (row.resources !== null) {
    // Without `resource` the audience is the family's: each of its servers must be usable still.
    await resourceTargets(ctx.db, row.resources)
  }
  if (row.family_expires_at.getTime() <= a.now.getTime()) {
    throw new InvalidGrantError('The refresh token has reached its maximum lifetime: authorize again')
  }
  if (row.retired_at !== null) {
    const answer = await withinGrace(ctx, creds, row, { ...a, jkt: a.dpop?.jkt ?? null })
    if (answer) return answer
    await revoke(ctx, { kind: 'refresh-families', familyIds: [row.family_id] }, a.now)
    await ctx.audit.record({ event: 'refresh_token.reused', userId: row.user_id, application: auditedApplication(application) }, null, null)
    throw new InvalidGrantError('The refresh token was used already: its authorization is revoked')
  }
  if (row.expires_at.getTime() <= a.now.getTime()) throw new InvalidGrantError('The refresh token has expired')
  throw new InvalidGrantError('The refresh token is invalid')
}

/**
 * docs/decisions/023-refresh-token-grace.md: a token retired less than the grace window ago whose
 * successor is unused is exchanged once more through that successor, which the statement retires;
 * anything else is reuse. Undefined: reuse.
 */
async function withinGrace(
  ctx: RefreshContext,
  creds: ClientCredentials,
  row: PresentedRefreshToken,
  a: Attempt,
): Promise<RefreshResponse | undefined> {
  const graceMs = ctx.refresh.reuseGraceSeconds * 1000
  if (graceMs === 0 || row.retired_at === null || a.now.getTime() - row.retired_at.getTime() >= graceMs) return undefined
  if (row.successor_hash === null || row.successor_retired_at !== null) return undefined
  return rotate(ctx, creds, { ...a, presentedHash: row.successor_hash })
}

function auditedApplication(application: Application): { clientId: string; name: string } {
  return { clientId: application.client_id, name: application.name }
}
