import { type BindingCheck, type PresentationContext, dpopBinding } from './token/presentation.js'
import { listAuthorizedApplications, revokeAccess } from './grants/authorized-applications.js'
import { type Actor, trailOf } from '../audit/actor.js'
import type { AuditLog } from '../audit/audit-log.js'
import type { Db } from '../db/connect.js'
import type { Clock } from '../lib/clock.js'
import type { GrantListing } from '../repositories/grants.js'
import type { RevocationBus } from '../revocation/bus.js'
import type { RevocationFeed, StreamClient, StreamRefusal } from '../revocation/stream-feed.js'
import type { TokenQuota } from '../revocation/token-quota.js'
import type { ApplicationCache } from './clients/application-cache.js'
import type { ClientDirectory } from './clients/client-directory.js'
import type { HostRules } from './clients/metadata-document.js'
import type { AuthorizingUser, IssueQuotas } from './authorize/authorization.js'
import type { SigningKeys } from './identity/signing-keys.js'
import { verifyIdTokenHint } from './identity/id-token-hint.js'
import type { IdTokenIssuer } from './identity/id-token.js'
import {
  type AuthorizeAnswer,
  type AuthorizeContext,
  type AuthorizeUser,
  answerAuthorizeRequest,
  authorizeDestination,
} from './authorize/authorize.js'
import { answerConsent } from './authorize/consent-answer.js'
import type { ClientAuthCache } from './token/client-auth-cache.js'
import { extractClientCredentials } from './token/client-auth.js'
import { ResourceServerOnlyError } from './errors.js'
import { type IntrospectionContext, introspect } from './token/introspection.js'
import type { Params } from './params.js'
import type { ScopeVocabulary } from './grants/scope.js'
import { authorizeRequestMetadata } from './authorize/authorize-metadata.js'
import { type PushContext, type PushedRequestResponse, pushAuthorizationRequest } from './authorize/pushed-requests.js'
import { TOKEN_GRANT_TYPES, type TokenResponse, exchangeAuthorizationCode } from './token/token-exchange.js'
import { revokeForClient } from './token/token-revocation.js'
import { DEVICE_CODE_GRANT_TYPE } from './device/device-flow.js'
import type { ServerTokenCache, ServerTokenEntry } from './token/token-validity.js'
import type { DpopBinding } from './dpop/binding.js'
import { DpopCheck, type DpopSettings } from './dpop/proof-check.js'
import { DPOP_SIGNING_ALGS } from '@gatehouse/verifier/shared'
import type { RefreshSettings } from './token/refresh-grant.js'
import type { ResourceSettings } from './resources/resource-indicators.js'

/*
 * The OAuth endpoints' and the resource-server endpoints' use cases, built once in
 * src/services.ts. The token, revoke, introspection and token-info endpoints and remembered
 * consent are hot paths: each context below is built here once, so a request costs one function
 * call more than calling the protocol function itself, and nothing else (no allocation, no await).
 */

export interface OAuthUseCases {
  /** GET /oauth/authorize (RFC 6749 4.1.1, 4.2.1); remembered consent is one statement. */
  authorize(query: unknown, user: AuthorizeUser): Promise<AuthorizeAnswer>
  /** POST /oauth/authorize: the actor's answer to a held request; an approval is audited. */
  answerConsent(actor: Actor, form: { heldId: unknown; decision: unknown }, session?: AuthorizingUser | null): Promise<AuthorizeAnswer>
  /**
   * Where the authorize request at `path` (a log-in page's `next`) would send the browser at the
   * end, if it names a usable client: the log-in form's CSP form-action must allow it.
   */
  authorizeDestination(path: string): Promise<string | undefined>
  /** POST /oauth/token, grant_type=authorization_code (RFC 6749 4.1.3). */
  /** `dpop`: what the request's valid DPoP proof binds the tokens to (RFC 9449 §5), checked by the route. */
  /** `resources`: the request's `resource` values (RFC 8707 §2), which requestReading keeps apart from `params`. */
  exchangeCode(params: Params, authorization: string | undefined, dpop?: DpopBinding, resources?: readonly string[]): Promise<TokenResponse>
  /** POST /oauth/par (RFC 9126 2): validates and keeps an authorize request for a minute. */
  pushAuthorizationRequest(
    params: Params,
    authorization: string | undefined,
    dpop?: DpopBinding,
    resources?: readonly string[],
  ): Promise<PushedRequestResponse>
  /**
   * RFC 9449 §4.3, §8: the binding the request's `DPoP` header (`header`, as Node gives it)
   * proves for `method` at the endpoint `path` under the issuer; undefined without the header.
   */
  checkDpop(header: string | string[] | undefined, method: string, path: string): Promise<DpopBinding | undefined>
  /** RFC 9449 §8.1: the `DPoP-Nonce` a successful DPoP response carries under DPOP_NONCE=required, else undefined. */
  dpopNonce(): Promise<string> | undefined
  /** POST /oauth/revoke (RFC 7009 2.1). */
  revokeToken(params: Params, authorization: string | undefined): Promise<void>
  /**
   * Whether a browser page at `origin` may call the token and revocation endpoints: a registered
   * single-page app's origin (docs/decisions/019-public-clients-and-consent.md).
   */
  allowsBrowserOrigin(origin: string): Promise<boolean>
  /** The authorization server's metadata (RFC 8414 2), built once. */
  metadata(): Readonly<Record<string, unknown>>
  /** "Authorized Applications": the user's grants, newest consent first. */
  listAuthorizedApplications(userId: string): Promise<GrantListing[]>
  /** "Revoke access" to one of the actor's grants; one not theirs, or gone, changes nothing. */
  revokeAccess(actor: Actor & { readonly userId: string }, grantId: string): Promise<void>
}

export interface ResourceUseCases {
  /** POST /oauth/introspect (RFC 7662 2): the response body. */
  introspect(params: Params, authorization: string | undefined): Promise<string>
  /**
   * GET /oauth/token/info: the entry of an active bearer token, null for any other; answered
   * without a promise when the token cache holds it.
   */
  tokenInfo(token: string): ServerTokenEntry | null | Promise<ServerTokenEntry | null>
  /**
   * RFC 9449 §7.1 at UserInfo and token info: the check of a token presented with the DPoP
   * scheme, against the request's DPoP header(s), its method and the endpoint's `path` under the
   * issuer; each proof is accepted once across every process.
   */
  dpopBinding(dpop: string | readonly string[] | undefined, method: string, path: string): BindingCheck
  /** The revocation stream's subscriber, authenticated by HTTP Basic; only a resource server may subscribe. */
  authenticateSubscriber(authorization: string | undefined): Promise<StreamClient>
  /** Why the feed refuses this subscriber now, if it does (docs/operating/limits.md). */
  streamRefusal(client: StreamClient): StreamRefusal | undefined
}

export interface OAuthDeps {
  db: Db
  clock: Clock
  bus: RevocationBus
  audit: AuditLog
  /** PUBLIC_URL: the issuer (RFC 9207) and the endpoints' base. */
  issuer: string
  /** Copies for remembered consent, and the single-page apps' origins for CORS. */
  applications: Pick<ApplicationCache, 'get' | 'allowsBrowserOrigin'>
  /** The one door from a client_id to its application (src/oauth/clients/client-directory.ts). */
  clientDirectory: ClientDirectory
  quotas: IssueQuotas
  tokenQuota: Pick<TokenQuota, 'issued'>
  /** TOKEN_AUTH_FAILURE_LIMIT. */
  clientAuthFailureLimit: number
  /** The ID Token signing keys (docs/decisions/014-signing-keys.md). */
  keys: SigningKeys
  /** ID_TOKEN_TTL. */
  idTokenTtlMs: number
  /** The scopes this Gatehouse knows: SCOPES_FILE's, or the built-in seed (docs/operating/scopes.md). */
  scopes: ScopeVocabulary
  /** DPOP_PROOF_MAX_AGE_SECONDS and DPOP_NONCE (docs/dpop.md). */
  dpop: DpopSettings
  /** REFRESH_TOKEN_FAMILY_MAX_DAYS, REFRESH_TOKEN_REUSE_GRACE_SECONDS (docs/expiring-tokens.md). */
  refresh: RefreshSettings
  /** RESOURCE_TOKEN_TTL_SECONDS_DEFAULT (docs/decisions/025-audiences.md). */
  resources: ResourceSettings
  /** CLIENT_ID_METADATA_DOCUMENTS: whether the metadata says so (docs/agents.md). */
  clientMetadataDocuments: boolean
  /** CLIENT_ID_METADATA_*_HOSTS when CLIENT_ID_METADATA_DOCUMENTS is on, else undefined: which metadata clients the client endpoints know. */
  metadataHosts: HostRules | undefined
}

/** RFC 8414 2, 3. */
function metadataOf(issuer: string, scopes: ScopeVocabulary, clientMetadataDocuments: boolean): Readonly<Record<string, unknown>> {
  const authMethods = ['client_secret_basic', 'client_secret_post']
  // A public client (native or single-page app) sends client_id alone (RFC 6749 2.1; RFC 7591 2 names it `none`).
  const publicAuthMethods = [...authMethods, 'none']
  return Object.freeze({
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    introspection_endpoint: `${issuer}/oauth/introspect`,
    scopes_supported: [...scopes.names],
    grant_types_supported: [...TOKEN_GRANT_TYPES, DEVICE_CODE_GRANT_TYPE, 'implicit'],
    // RFC 8628 4: the device flow's first endpoint.
    device_authorization_endpoint: `${issuer}/oauth/device_authorization`,
    token_endpoint_auth_methods_supported: publicAuthMethods,
    revocation_endpoint_auth_methods_supported: publicAuthMethods,
    introspection_endpoint_auth_methods_supported: authMethods,
    code_challenge_methods_supported: ['S256', 'plain'],
    // RFC 9207 3: every authorization response carries `iss`.
    authorization_response_iss_parameter_supported: true,
    // RFC 9449 §5.1: the token endpoint binds tokens to a key its DPoP proofs show (docs/dpop.md).
    dpop_signing_alg_values_supported: [...DPOP_SIGNING_ALGS],
    // Response types and modes, PAR and request objects (docs/oauth-endpoints.md "`GET /oauth/authorize`"): src/oauth/authorize/authorize-metadata.ts.
    ...authorizeRequestMetadata(issuer),
    // draft-ietf-oauth-client-id-metadata-document §5: a client_id may be the URL of the client's
    // metadata document; said only when the operator turned it on (docs/agents.md).
    ...(clientMetadataDocuments ? { client_id_metadata_document_supported: true } : {}),
  })
}

export function oauthUseCases(deps: OAuthDeps): OAuthUseCases {
  const { db, clock, bus, audit } = deps
  const idTokens: IdTokenIssuer = { keys: deps.keys, issuer: deps.issuer, ttlMs: deps.idTokenTtlMs }
  const authorizing: AuthorizeContext = {
    verifyHint: (hint) => verifyIdTokenHint({ keys: deps.keys, issuer: deps.issuer }, hint),
    db,
    clock,
    issuer: deps.issuer,
    scopes: deps.scopes,
    applications: deps.applications,
    clientDirectory: deps.clientDirectory,
    quotas: deps.quotas,
    tokenQuota: deps.tokenQuota,
    idTokens,
    resources: deps.resources,
  }
  const clients: Parameters<typeof exchangeAuthorizationCode>[0] = {
    db,
    clock,
    bus,
    clientAuthFailureLimit: deps.clientAuthFailureLimit,
    metadataHosts: deps.metadataHosts,
    tokenQuota: deps.tokenQuota,
    idTokens,
    scopes: deps.scopes,
    refresh: deps.refresh,
    audit,
    resources: deps.resources,
  }
  const pushing: PushContext = { ...clients, issuer: deps.issuer, clientDirectory: deps.clientDirectory }
  const metadata = metadataOf(deps.issuer, deps.scopes, deps.clientMetadataDocuments)
  const dpop = new DpopCheck(db, clock, deps.issuer, deps.dpop)
  return {
    authorize: (query, user) => answerAuthorizeRequest(authorizing, query, user),
    // The session's log-in (auth_time, amr, sid) goes into an ID Token; the actor is who answered.
    answerConsent: (actor, form, session) =>
      answerConsent(
        authorizing,
        form,
        actor.userId === null ? null : session?.id === actor.userId ? session : { id: actor.userId },
        trailOf(audit, actor),
      ),
    authorizeDestination: (path) => authorizeDestination(authorizing, path),
    exchangeCode: (params, authorization, binding, resources) =>
      exchangeAuthorizationCode(clients, params, authorization, binding, resources),
    pushAuthorizationRequest: (params, authorization, binding, resources) =>
      pushAuthorizationRequest(pushing, params, authorization, binding, resources),
    checkDpop: (header, method, path) => dpop.check(header, method, path),
    dpopNonce: () => dpop.nonceToProvide(),
    revokeToken: (params, authorization) => revokeForClient(clients, params, authorization),
    allowsBrowserOrigin: (origin) => deps.applications.allowsBrowserOrigin(origin),
    metadata: () => metadata,
    listAuthorizedApplications: (userId) => listAuthorizedApplications(db, userId, clock()),
    revokeAccess: (actor, grantId) => revokeAccess({ db, bus }, actor.userId, grantId, clock(), trailOf(audit, actor)),
  }
}

export function resourceUseCases(
  deps: { clients: ClientAuthCache; tokens: ServerTokenCache; feed: RevocationFeed } & PresentationContext,
): ResourceUseCases {
  const { clients, tokens, feed } = deps
  const introspection: IntrospectionContext = { clients, tokens }
  return {
    introspect: (params, authorization) => introspect(introspection, params, authorization),
    tokenInfo: (token) => tokens.check(token),
    dpopBinding: (dpop, method, path) => dpopBinding(deps, dpop, method, path),
    async authenticateSubscriber(authorization) {
      // HTTP Basic only: a GET has no body, and credentials never go in a URL.
      const client = await clients.authenticate(extractClientCredentials({}, authorization))
      if (!client.isResourceServer) {
        throw new ResourceServerOnlyError('Only applications an operator marked as resource servers may subscribe to revocations')
      }
      return client
    },
    streamRefusal: (client) => feed.refusal(client),
  }
}
