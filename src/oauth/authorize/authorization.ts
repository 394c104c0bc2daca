import { sha256Hex } from '../../lib/crypto.js'
import type { Db } from '../../db/connect.js'
import { LIFETIMES, QUOTAS } from '../../limits/policy.js'
import { generateAccessToken, generateAuthorizationCode } from '../../lib/tokens.js'
import { insertAccessToken } from '../../repositories/access-tokens.js'
import { lockActiveApplicationAndUser } from '../../repositories/applications.js'
import {
  type CodeIdentity,
  type SessionCheck,
  countRecentCodes,
  insertAuthorizationCode,
  insertCodeUnderGrant,
} from '../../repositories/authorization-codes.js'
import { upsertGrant } from '../../repositories/grants.js'
import {
  type PendingWithClient,
  consumePendingAuthorization,
  findPendingAuthorization,
  insertPendingAuthorization,
} from '../../repositories/pending-authorizations.js'
import type { TokenQuota } from '../../revocation/token-quota.js'
import { findUserById } from '../../repositories/users.js'
import type { AuthorizationRequest } from './authorize-request.js'
import { errorResponse } from './authorize-request.js'
import { issuesAccessToken, issuesIdToken } from './response-types.js'
import { AccessDeniedError } from '../errors.js'
import { type ClientResponse, clientResponse } from '../clients/redirect-uri.js'
import { type IdTokenIssuer, type IdTokenSubject, accessTokenHash, signIdToken } from '../identity/id-token.js'
import { formatScope } from '../grants/scope.js'
import { claimsOfScopes } from '../identity/userinfo.js'
import { isPublicKind } from '../clients/kinds.js'
import { type ResourceSettings, audienceTtlSeconds } from '../resources/resource-indicators.js'

/** The quota an issuing step keeps (CODE_ISSUE_LIMIT, docs/operating/limits.md). */
export interface IssueQuotas {
  /** Authorization codes issued per (user, application) in a minute. */
  readonly codesPerMinute: number
}

/**
 * The logged-in user an authorization is issued for, and what their session tells an ID Token
 * (OpenID Connect Core 2: auth_time, amr, sid); absent outside a browser session.
 */
export interface AuthorizingUser {
  readonly id: string
  readonly amr?: readonly string[]
  readonly authenticatedAt?: Date
  readonly sid?: string
}

/** What an issuing step did: a redirect to the client, or why it issued nothing. */
export type Issued =
  | { kind: 'issued'; response: ClientResponse }
  | { kind: 'no-grant' }
  | { kind: 'over-quota' }
  | { kind: 'gone' }
  | { kind: 'session-changed' }

/**
 * Whether standing consent may stand in for the page. Only for the code flow: the token flow and
 * OpenID Connect's implicit flow always ask, since nothing authenticates the client (RFC 8252
 * 8.6, RFC 6749 10.2), and
 * `prompt=consent` asks again by request. A public client's code going to a redirect URI another
 * app on the device could claim (a private-use scheme or loopback, RFC 8252 8.6) is also asked
 * for every time, unless an operator verified the application
 * (docs/decisions/019-public-clients-and-consent.md).
 */
export function mayUseRememberedConsent(req: AuthorizationRequest): boolean {
  return req.responseType === 'code' && req.prompt !== 'consent' && !mayBeImpersonated(req)
}

function mayBeImpersonated(req: AuthorizationRequest): boolean {
  const app = req.application
  return isPublicKind(app.kind) && app.verified_at === null && !req.redirectUri.startsWith('https://')
}

/**
 * The code under the user's standing consent, when it covers these scopes (or more) and these
 * resources (the APIs the user approved, or every API; RFC 8707, docs/decisions/025-audiences.md); 'no-grant'
 * when the user must be asked, 'over-quota' past CODE_ISSUE_LIMIT, 'session-changed' when the
 * session is not (or no longer) as `user` says. One statement: no grant read, no transaction,
 * and the grant is left as it is (consent is only recorded when given).
 */
export async function issueUnderRememberedConsent(
  db: Db,
  req: AuthorizationRequest,
  user: AuthorizingUser & SessionCheck,
  now: Date,
  issuer: string,
  codesPerMinute: number,
): Promise<Exclude<Issued, { kind: 'gone' }>> {
  const { code, row } = newCode(req, user, now)
  const result = await insertCodeUnderGrant(db, row, req.application, user, codesPerMinute, QUOTAS.codesPerGrant.windowMs)
  if (result !== 'issued') return { kind: result }
  return { kind: 'issued', response: clientResponse(req.redirectUri, { code, state: req.state, iss: issuer }, req.responseMode) }
}

/** A fresh code and the row fields binding it to the request (RFC 6749 4.1.2, RFC 7636 4.4). */
function newCode(req: AuthorizationRequest, user: AuthorizingUser, now: Date) {
  const code = generateAuthorizationCode()
  const row = {
    codeHash: sha256Hex(code),
    userId: user.id,
    scopes: req.scopes,
    redirectUri: req.sentRedirectUri,
    codeChallenge: req.codeChallenge,
    codeChallengeMethod: req.codeChallengeMethod,
    now,
    expiresAt: new Date(now.getTime() + LIFETIMES.authorizationCodeMs),
    identity: identityOfCode(req, user),
    dpopJkt: req.dpopJkt,
    resources: req.resources,
  }
  return { code, row }
}

/** What the ID Token of this code's exchange states (OpenID Connect Core 3.1.3.6); null without `openid`. */
function identityOfCode(req: AuthorizationRequest, user: AuthorizingUser): CodeIdentity | null {
  if (!req.scopes.includes('openid')) return null
  return { nonce: req.nonce ?? null, authTime: user.authenticatedAt ?? null, amr: user.amr ? [...user.amr] : null, sid: user.sid ?? null }
}

/**
 * Keeps the validated request for the consent page and returns its id: the form carries only
 * this id, so what the page shows is exactly what an approval can issue.
 */
export function holdForConsent(db: Db, req: AuthorizationRequest, userId: string, now: Date): Promise<string> {
  return insertPendingAuthorization(db, {
    userId,
    applicationId: req.application.id,
    responseType: req.responseType,
    responseMode: req.responseMode,
    redirectUri: req.sentRedirectUri,
    scopes: req.scopes,
    state: req.state ?? null,
    codeChallenge: req.codeChallenge,
    codeChallengeMethod: req.codeChallengeMethod,
    nonce: req.nonce ?? null,
    dpopJkt: req.dpopJkt,
    resources: req.resources,
    now,
    expiresAt: new Date(now.getTime() + LIFETIMES.consentRequestMs),
    keepPerUser: QUOTAS.pendingPerUser.max,
  })
}

/** A held request, live; restricted to `userId` when given. */
export function findHeldRequest(db: Db, id: string, now: Date, userId?: string): Promise<PendingWithClient | undefined> {
  return findPendingAuthorization(db, id, now, userId)
}

/**
 * The authorize parameters of a held request, as a fresh GET would send them: it is validated
 * again against the application as it is now before anything is issued, and a user who must
 * log in first comes back through this GET. `resource` is the one that may be a list (RFC 8707 §2).
 */
export function heldRequestParams(held: PendingWithClient): Record<string, string | string[]> {
  const params: Record<string, string | string[]> = {
    client_id: held.client_id,
    response_type: held.response_type,
    scope: held.scopes.join(' '),
  }
  if (held.redirect_uri !== null) params.redirect_uri = held.redirect_uri
  if (held.response_mode !== null) params.response_mode = held.response_mode
  if (held.state !== null) params.state = held.state
  if (held.code_challenge !== null) params.code_challenge = held.code_challenge
  if (held.code_challenge_method !== null) params.code_challenge_method = held.code_challenge_method
  if (held.nonce !== null) params.nonce = held.nonce
  if (held.dpop_jkt !== null) params.dpop_jkt = held.dpop_jkt
  if (held.resources !== null) params.resource = held.resources
  return params
}

/** heldRequestParams as a query string: each resource its own `resource` pair. */
export function heldRequestQuery(held: PendingWithClient): string {
  const query = new URLSearchParams()
  for (const [name, value] of Object.entries(heldRequestParams(held))) {
    for (const v of Array.isArray(value) ? value : [value]) query.append(name, v)
  }
  return query.toString()
}

/** Answers a held request once; false when it was answered already or expired. */
export function releaseHeldRequest(db: Db, id: string, userId: string, now: Date): Promise<boolean> {
  return consumePendingAuthorization(db, id, userId, now)
}

/** What issuing needs besides the database: the quotas, the ID Token signer, and the lifetime of a token for resources. */
export interface ApproveContext {
  db: Db
  quotas: IssueQuotas
  tokenQuota: Pick<TokenQuota, 'issued'>
  idTokens: IdTokenIssuer
  resources: ResourceSettings
}

/**
 * Issues the response to an approved held request and records the consent, in one
 * transaction that also deletes the held request: a second submission of the form finds it
 * gone ('gone'), never a second code or token. The quotas of docs/operating/limits.md hold
 * here too: a code past CODE_ISSUE_LIMIT is refused and the request stays held; after a token,
 * TokenQuota revokes the grant's oldest live ones beyond MAX_TOKENS_PER_GRANT once this commits.
 */
export async function approveAuthorization(
  ctx: ApproveContext,
  req: AuthorizationRequest,
  user: AuthorizingUser,
  now: Date,
  issuer: string,
  heldId: string,
): Promise<Exclude<Issued, { kind: 'session-changed' }>> {
  const userId = user.id
  const applicationId = req.application.id
  if (req.responseType === 'code') {
    const since = new Date(now.getTime() - QUOTAS.codesPerGrant.windowMs)
    const recent = await countRecentCodes(ctx.db, { userId, applicationId, since }, ctx.quotas.codesPerMinute)
    if (recent >= ctx.quotas.codesPerMinute) return { kind: 'over-quota' }
  }
  // Signed before the transaction, which then only stores: a failure to sign issues nothing.
  const inBrowser = req.responseType === 'code' ? undefined : await browserResponse(ctx, req, user, now, issuer)
  const issued = await ctx.db.transaction().execute(async (trx): Promise<Exclude<Issued, { kind: 'session-changed' }>> => {
    // The application or the user suspended since the request was validated or the session read
    // (docs/operating/admin.md): nothing is issued.
    if (!(await lockActiveApplicationAndUser(trx, applicationId, userId))) return { kind: 'gone' }
    if (!(await consumePendingAuthorization(trx, heldId, userId, now))) return { kind: 'gone' }
    const grant = { userId, applicationId, scopes: req.scopes, resources: req.resources, now }
    if (inBrowser === undefined) {
      const { code, row } = newCode(req, user, now)
      await insertAuthorizationCode(trx, { ...row, applicationId })
      await upsertGrant(trx, grant)
      return { kind: 'issued', response: clientResponse(req.redirectUri, { code, state: req.state, iss: issuer }, req.responseMode) }
    }
    if (inBrowser.accessToken !== undefined) {
      await insertAccessToken(trx, {
        tokenHash: sha256Hex(inBrowser.accessToken),
        applicationId,
        userId,
        scopes: req.scopes,
        now,
        ...inBrowser.audience,
      })
    }
    await upsertGrant(trx, grant)
    return { kind: 'issued', response: clientResponse(req.redirectUri, inBrowser.params, req.responseMode) }
  })
  if (issued.kind === 'issued' && issuesAccessToken(req.responseType)) ctx.tokenQuota.issued({ userId, applicationId })
  return issued
}

/**
 * The parameters of a response delivered through the browser: the token flow's access token
 * (RFC 6749 4.2.2; in the fragment, which browsers never send to servers), OpenID Connect's ID
 * Token (Core 3.2.2.5), or both; `accessToken` is for the caller to store.
 */
async function browserResponse(
  ctx: Pick<ApproveContext, 'db' | 'idTokens' | 'resources'>,
  req: AuthorizationRequest,
  user: AuthorizingUser,
  now: Date,
  issuer: string,
): Promise<{
  accessToken: string | undefined
  audience: { audience: string[]; expiresAt: Date } | undefined
  params: Record<string, string | undefined>
}> {
  const accessToken = issuesAccessToken(req.responseType) ? generateAccessToken() : undefined
  const params: Record<string, string | undefined> =
    accessToken === undefined ? {} : { access_token: accessToken, token_type: 'Bearer', scope: formatScope(req.scopes) }
  // RFC 8707 §2.1: a token for resources is theirs alone and expires (docs/decisions/025-audiences.md).
  let audience: { audience: string[]; expiresAt: Date } | undefined
  if (accessToken !== undefined && req.resources !== null) {
    const ttl = audienceTtlSeconds(req.application.access_token_ttl_seconds, req.resourceTargets, ctx.resources)
    audience = { audience: req.resources, expiresAt: new Date(now.getTime() + ttl * 1000) }
    params.expires_in = String(ttl)
  }
  if (issuesIdToken(req.responseType)) params.id_token = await implicitIdToken(ctx, req, user, accessToken, now)
  return { accessToken, audience, params: { ...params, state: req.state, iss: issuer } }
}

/**
 * The implicit flow's ID Token (OpenID Connect Core 3.2.2.10): the code flow's claims, its nonce
 * required (3.2.2.1), at_hash beside an access token, and without one the claims of the email
 * and profile scopes, which the relying party has no UserInfo to ask for (5.4).
 */
async function implicitIdToken(
  ctx: Pick<ApproveContext, 'db' | 'idTokens'>,
  req: AuthorizationRequest,
  user: AuthorizingUser,
  accessToken: string | undefined,
  now: Date,
): Promise<string> {
  const alg = req.application.id_token_alg
  let extra: Record<string, unknown>
  if (accessToken !== undefined) extra = { at_hash: accessTokenHash(accessToken, alg) }
  else if (!req.scopes.includes('email') && !req.scopes.includes('profile')) extra = {}
  else {
    const found = await findUserById(ctx.db, user.id)
    extra = found ? claimsOfScopes(found, req.scopes) : {}
  }
  const subject: IdTokenSubject = {
    sub: user.id,
    alg,
    nonce: req.nonce ?? null,
    authTime: user.authenticatedAt ?? null,
    amr: user.amr ?? null,
    sid: user.sid ?? null,
  }
  return signIdToken(ctx.idTokens, subject, req.application.client_id, now, extra)
}

/** RFC 6749 4.1.2.1: the resource owner denied the request (or could not be asked). */
export function denyAuthorization(req: AuthorizationRequest, issuer: string, description = 'The user denied the request'): ClientResponse {
  return errorResponse(
    { redirectUri: req.redirectUri, state: req.state, mode: req.responseMode },
    new AccessDeniedError(description),
    issuer,
  )
}
