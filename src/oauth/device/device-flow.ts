import type { Application } from '../../db/schema.js'
import { sha256Hex } from '../../lib/crypto.js'
import { generateAccessToken } from '../../lib/tokens.js'
import { LIFETIMES, QUOTAS } from '../../limits/policy.js'
import { insertAccessToken } from '../../repositories/access-tokens.js'
import { lockActiveApplicationAndUser } from '../../repositories/applications.js'
import { hasGrant } from '../../repositories/grants.js'
import { consumeDeviceAuthorization, insertDeviceAuthorization, pollDeviceAuthorization } from '../../repositories/device-authorizations.js'
import type { TokenQuota } from '../../revocation/token-quota.js'
import {
  AccessDeniedError,
  AuthorizationPendingError,
  ExpiredTokenError,
  InvalidDpopProofError,
  InvalidGrantError,
  InvalidTargetError,
  PollTooSoonError,
  UnauthorizedClientError,
  UnsupportedGrantTypeError,
} from '../errors.js'
import type { DpopBinding } from '../dpop/binding.js'
import { type ScopeVocabulary, formatScope } from '../grants/scope.js'
import { type Params, optional, required } from '../params.js'
import { type ClientEndpointContext, authenticateClient, extractClientCredentials } from '../token/client-auth.js'
import type { TokenResponse } from '../token/token-exchange.js'
import { type RefreshSettings, startRefreshFamily } from '../token/refresh-grant.js'
import { generateDeviceCode, generateUserCode, normaliseUserCode, userCodeDigest } from './user-code.js'
import {
  type ResourceSettings,
  audienceTtlSeconds,
  parseResources,
  resourceTargets,
  withinAuthorized,
} from '../resources/resource-indicators.js'

/** RFC 8628 3.4: the grant type of the device's token request. */
export const DEVICE_CODE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code'

/** RFC 8628 3.5: what a device that polls too soon adds to its interval. */
export const SLOW_DOWN_STEP_SECONDS = 5

export interface DeviceFlowContext extends ClientEndpointContext {
  scopes: ScopeVocabulary
  tokenQuota: Pick<TokenQuota, 'issued'>
  /** PUBLIC_URL: the verification URI is `${issuer}/device`. */
  issuer: string
  /** DEVICE_CODE_INTERVAL_SECONDS. */
  intervalSeconds: number
  /** REFRESH_TOKEN_FAMILY_MAX_DAYS for applications with lifetimes (docs/expiring-tokens.md). */
  refresh: RefreshSettings
  /** RESOURCE_TOKEN_TTL_SECONDS_DEFAULT (docs/decisions/025-audiences.md). */
  resources: ResourceSettings
}

/** RFC 8628 3.2. */
export interface DeviceAuthorizationResponse {
  device_code: string
  user_code: string
  verification_uri: string
  verification_uri_complete: string
  expires_in: number
  interval: number
}

/**
 * The client as the token endpoint authenticates it (src/oauth/token/client-auth.ts, so every kind
 * of client the token endpoint accepts is accepted here), and allowed the device flow by its owner.
 */
async function deviceClient(ctx: DeviceFlowContext, params: Params, authorization: string | undefined): Promise<Application> {
  const creds = extractClientCredentials(params, authorization)
  const application = await authenticateClient(ctx.db, ctx.clock, creds, ctx.clientAuthFailureLimit, ctx.metadataHosts)
  if (!application.allow_device_flow) {
    throw new UnauthorizedClientError('This application may not use the device flow: its owner has not turned it on in the console')
  }
  return application
}

/** POST /oauth/device_authorization (RFC 8628 3.1, 3.2). */
export async function requestDeviceAuthorization(
  ctx: DeviceFlowContext,
  params: Params,
  authorization: string | undefined,
  sentResources: readonly string[] = [],
): Promise<DeviceAuthorizationResponse> {
  const application = await deviceClient(ctx, params, authorization)
  const scopes = ctx.scopes.parse(optional(params, 'scope'), application.allowed_scopes)
  // RFC 8707 §2: held with the request, shown on the consent page, narrowed at the token request.
  const resources = parseResources(sentResources)
  if (resources !== null) await resourceTargets(ctx.db, resources)
  const now = ctx.clock()
  const deviceCode = generateDeviceCode()
  const userCode = generateUserCode()
  await insertDeviceAuthorization(ctx.db, {
    deviceCodeHash: sha256Hex(deviceCode),
    userCodeHash: userCodeDigest(normaliseUserCode(userCode)!),
    applicationId: application.id,
    scopes,
    now,
    expiresAt: new Date(now.getTime() + LIFETIMES.deviceCodeMs),
    intervalSeconds: ctx.intervalSeconds,
    resources,
    keepPerApplication: QUOTAS.deviceAuthorizationsPerApplication.max,
  })
  const verificationUri = `${ctx.issuer}/device`
  return {
    device_code: deviceCode,
    user_code: userCode,
    verification_uri: verificationUri,
    verification_uri_complete: `${verificationUri}?${new URLSearchParams({ user_code: userCode })}`,
    expires_in: LIFETIMES.deviceCodeMs / 1000,
    interval: ctx.intervalSeconds,
  }
}

/**
 * POST /oauth/token, grant_type=urn:ietf:params:oauth:grant-type:device_code (RFC 8628 3.4, 3.5).
 * Pending: authorization_pending, or slow_down (and 5 s more) for a poll within the interval.
 * Denied: access_denied once, then the code is gone. Approved: one ordinary user token, and the
 * code is gone (single use); the grant was recorded when the user approved.
 */
export async function exchangeDeviceCode(
  ctx: DeviceFlowContext,
  params: Params,
  authorization: string | undefined,
  dpop?: DpopBinding,
  sentResources: readonly string[] = [],
): Promise<TokenResponse> {
  if (required(params, 'grant_type') !== DEVICE_CODE_GRANT_TYPE) throw new UnsupportedGrantTypeError('Expected the device code grant')
  const application = await deviceClient(ctx, params, authorization)
  // RFC 6749 §5.2: the client first, then the form of each `resource` (RFC 8707 §2).
  const asked = parseResources(sentResources)
  // RFC 9449 §5.2 `dpop_bound_access_tokens`: refused before the poll, so the device may retry with a proof.
  if (application.require_dpop && dpop === undefined) {
    throw new InvalidDpopProofError('This application requires DPoP: send a DPoP proof with the token request')
  }
  const deviceCode = required(params, 'device_code')
  const now = ctx.clock()
  // The row as it was; a pending poll is recorded by the same statement.
  const row = await pollDeviceAuthorization(ctx.db, {
    deviceCodeHash: sha256Hex(deviceCode),
    applicationId: application.id,
    now,
    slowDownStep: SLOW_DOWN_STEP_SECONDS,
  })
  // A code of another client is "invalid" to this one (RFC 6749 5.2 invalid_grant).
  if (!row || row.application_id !== application.id) throw new InvalidGrantError('The device code is invalid')
  if (row.expires_at.getTime() <= now.getTime()) throw new ExpiredTokenError('The device code has expired; start again on the device')
  if (row.status === 'pending') {
    // The same rule as the statement's: a poll within the interval since the last one.
    const tooSoon = row.last_polled_at !== null && now.getTime() - row.last_polled_at.getTime() < row.interval_seconds * 1000
    if (tooSoon)
      throw new PollTooSoonError(`Polled too soon: wait ${row.interval_seconds + SLOW_DOWN_STEP_SECONDS} seconds between requests`)
    throw new AuthorizationPendingError('The user has not answered yet')
  }
  if (row.status === 'denied') {
    await consumeDeviceAuthorization(ctx.db, row.id)
    throw new AccessDeniedError('The user denied the request')
  }
  // RFC 8707 §2.2: `resource` narrows what the device asked for, never widens it; absent, all of that.
  if (asked !== null && !withinAuthorized(asked, row.resources)) {
    throw new InvalidTargetError('A requested resource was not part of the authorization')
  }
  const audience = asked ?? row.resources
  const targets = audience === null ? [] : await resourceTargets(ctx.db, audience)
  const grant = { applicationId: application.id, userId: row.user_id!, scopes: row.scopes, dpopJkt: dpop?.jkt }
  // RFC 9449 §5: a public client's refresh tokens are bound to its proof's key.
  const familyJkt = application.secret_hash === null ? (dpop?.jkt ?? null) : null
  const resources =
    audience === null
      ? undefined
      : { audience, granted: row.resources, ttlSeconds: audienceTtlSeconds(application.access_token_ttl_seconds, targets, ctx.resources) }
  return issueDeviceToken(ctx, row.id, grant, application, { now, familyJkt, resources })
}

/**
 * The approved request's one token, in the transaction that deletes the request; for an
 * application with lifetimes an expiring one, and its refresh-token family (docs/expiring-tokens.md).
 */
async function issueDeviceToken(
  ctx: DeviceFlowContext,
  id: string,
  grant: { applicationId: string; userId: string; scopes: string[]; dpopJkt: string | undefined },
  lifetimes: Pick<Application, 'access_token_ttl_seconds' | 'refresh_token_ttl_seconds'>,
  {
    now,
    familyJkt,
    resources,
  }: {
    now: Date
    familyJkt: string | null
    /** RFC 8707: the token's audience, what the device asked for, and the token's lifetime (docs/decisions/025-audiences.md). */
    resources?: { audience: string[]; granted: string[] | null; ttlSeconds: number } | undefined
  },
): Promise<TokenResponse> {
  const token = generateAccessToken()
  const tokenHash = sha256Hex(token)
  const accessTtl = resources?.ttlSeconds ?? lifetimes.access_token_ttl_seconds
  // A token for resources has a refresh token only when the owner chose lifetimes (docs/decisions/025-audiences.md).
  const refreshTtl = lifetimes.access_token_ttl_seconds === null ? null : lifetimes.refresh_token_ttl_seconds
  const expiresAt = accessTtl === null ? undefined : new Date(now.getTime() + accessTtl * 1000)
  let expiring: { expires_in: number; refresh_token?: string } | undefined
  const issued = await ctx.db.transaction().execute(async (trx) => {
    // A suspension since the approval (docs/operating/admin.md) issues nothing.
    if (!(await lockActiveApplicationAndUser(trx, grant.applicationId, grant.userId))) return 'suspended' as const
    if (!(await consumeDeviceAuthorization(trx, id))) return 'used' as const
    // "Revoke access" since the approval withdrew the consent this token would stand on.
    if (!(await hasGrant(trx, grant.userId, grant.applicationId))) return 'revoked' as const
    const inserted = await insertAccessToken(trx, { tokenHash, ...grant, now, expiresAt, audience: resources?.audience })
    if (expiresAt !== undefined && refreshTtl !== null) {
      const at = {
        user_id: grant.userId,
        application_id: grant.applicationId,
        scopes: grant.scopes,
        created_at: now,
        expires_at: expiresAt,
      }
      expiring = await startRefreshFamily({ db: trx, refresh: ctx.refresh }, at, {
        accessTokenHash: tokenHash,
        refreshTtlSeconds: refreshTtl,
        sid: null,
        dpopJkt: familyJkt,
        resources: resources?.granted ?? null,
      })
    }
    return inserted
  })
  if (issued === 'suspended') throw new AccessDeniedError('The application or the account is suspended')
  if (issued === 'used') throw new InvalidGrantError('The device code was used already')
  if (issued === 'revoked') throw new AccessDeniedError('The user revoked access after approving')
  ctx.tokenQuota.issued({ userId: grant.userId, applicationId: grant.applicationId }, expiring?.refresh_token !== undefined)
  return {
    access_token: token,
    token_type: grant.dpopJkt === undefined ? 'Bearer' : 'DPoP',
    scope: formatScope(ctx.scopes.normalize(grant.scopes)),
    created_at: Math.floor(issued.created_at.getTime() / 1000),
    ...(expiring ?? (expiresAt === undefined ? {} : { expires_in: accessTtl! })),
  }
}
