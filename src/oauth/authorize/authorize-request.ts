import type { Application, ApplicationKind } from '../../db/schema.js'
import { isPublicKind } from '../clients/kinds.js'
import { isClientIdWithinBound } from '../../lib/tokens.js'
import { InvalidRequestError, OAuthError, RequestNotSupportedError, RequestUriNotSupportedError } from '../errors.js'
import { ID_TOKEN_HINT_MAX_LENGTH } from '../identity/id-token-hint.js'
import { type ParamReading, describeProblem, optional } from '../params.js'
import { type ChallengeMethod, parseChallengeMethod, validateChallenge } from '../token/pkce.js'
import { type ClientResponse, type ResponseMode, clientResponse, findMatchingRedirectUri } from '../clients/redirect-uri.js'
import { type ResponseType, checkResponseMode, checkResponseType, issuesIdToken, responseModeFor } from './response-types.js'
import type { ScopeVocabulary } from '../grants/scope.js'
import { type LogInDemand, logInDemand, promptOf } from './login-demand.js'
import type { Db } from '../../db/connect.js'
import { type ResourceTarget, parseResources, resourceTargets } from '../resources/resource-indicators.js'

/*
 * Validation of an authorization request (RFC 6749 4.1.1, 4.2.1) in the two phases of
 * RFC 6749 4.1.2.1: until the client and its redirect URI are established, nothing may be
 * sent to the redirect URI (an open redirector otherwise, RFC 9700 4.11); afterwards every
 * error goes back to the client.
 */

/**
 * The application with its owner's email and whether they verified it, for the consent page; a
 * metadata document's client has no owner (docs/decisions/026-client-metadata-documents.md).
 */
export type AuthorizeApplication = Application & { owner_email: string | null; owner_email_verified: boolean }

/** How the client_id is resolved: a database read, or the remembered-consent path's cache. */
export type ApplicationLoader = (clientId: string) => AuthorizeApplication | undefined | Promise<AuthorizeApplication | undefined>

export interface AuthorizationRequest {
  application: AuthorizeApplication
  /** Where the browser is sent: the sent redirect_uri, or the only registered one. */
  redirectUri: string
  /** As sent, byte for byte; bound to the code so the token request must repeat it (4.1.3). */
  sentRedirectUri: string | null
  responseType: ResponseType
  /** response_mode, or the response type's default (query for code, fragment for the others). */
  responseMode: ResponseMode
  /** What the grant will hold: the requested scopes and, under a scopes file, the ones they imply. */
  scopes: string[]
  state: string | undefined
  codeChallenge: string | null
  codeChallengeMethod: ChallengeMethod | null
  /** prompt=none or prompt=consent (OpenID Connect Core 3.1.2.1); login is `freshLogIn`. */
  prompt: 'consent' | 'none' | undefined
  /** The log-in the request needs, beyond a session (OpenID Connect Core 3.1.2.1). */
  logIn: LogInDemand
  /** OpenID Connect Core 3.1.2.1: echoed in the ID Token. */
  nonce: string | undefined
  /**
   * OpenID Connect Core 3.1.2.1: an ID Token naming the user the client expects, as sent; its
   * signature is checked by the answer (src/oauth/authorize/authorize.ts), which may need a key read.
   */
  idTokenHint: string | undefined
  /** RFC 9449 §10: the thumbprint of the key the code is bound to (`dpop_jkt`), or null. */
  dpopJkt: string | null
  /** RFC 8707: the `resource` identifiers, sorted and distinct; null when the request named none. */
  resources: string[] | null
  /** Their resource servers, for the consent page and the lifetime of a token issued in the browser; empty without resources. */
  resourceTargets: readonly ResourceTarget[]
}

export type AuthorizeOutcome =
  | { kind: 'ok'; request: AuthorizationRequest }
  /** Client or redirect URI unusable: show an error page, never redirect (4.1.2.1). */
  | { kind: 'fatal'; message: string }
  /**
   * Anything else: the error response for the client. Whether the browser is sent there
   * automatically depends on trust (RFC 9700 4.11.2, src/oauth/authorize/authorize-answers.ts).
   */
  | {
      kind: 'redirect'
      response: ClientResponse
      /** The error itself, for the pushed-request endpoint, which answers it as JSON (RFC 9126 2.3). */
      error: OAuthError
      application: AuthorizeApplication
      redirectUri: string
      description: string
    }

/**
 * Where an authorize request's parameters come from: the query (`plain`), a pushed request
 * (RFC 9126), or a request held for consent, validated when it was held. Only a plain request
 * is refused for an application that requires pushed requests.
 */
export type RequestOrigin = 'plain' | 'pushed' | 'held'

/** The error response of RFC 6749 4.1.2.1 / 4.2.2.1, with `iss` (RFC 9207 2). */
export function errorResponse(
  target: { redirectUri: string; state: string | undefined; mode: ResponseMode },
  error: OAuthError,
  issuer: string,
): ClientResponse {
  return clientResponse(
    target.redirectUri,
    { error: error.error, error_description: error.description, state: target.state, iss: issuer },
    target.mode,
  )
}

/**
 * For the code flow this reads only the application's CODE_FLOW_SETTINGS
 * (src/repositories/authorization-codes.ts), which insertCodeUnderGrant re-checks.
 */
export type ClientTarget =
  | { kind: 'ok'; application: AuthorizeApplication; redirectUri: string; sentRedirectUri: string | null }
  | { kind: 'fatal'; message: string }

/**
 * Phase 1 (RFC 6749 4.1.2.1): the client and the redirect URI, the only place a response may
 * go. Also tells the log-in page where an authorize request will end (CSP form-action).
 */
export async function establishClient(reading: ParamReading, load: ApplicationLoader): Promise<ClientTarget> {
  for (const name of ['client_id', 'redirect_uri']) {
    const problem = reading.problems.find((p) => p.name === name)?.problem
    if (problem === 'repeated') return { kind: 'fatal', message: `The request repeats ${name}.` }
    if (problem !== undefined) return { kind: 'fatal', message: `${describeProblem(name, problem)}.` }
  }
  const clientId = optional(reading.params, 'client_id')
  if (!clientId) return { kind: 'fatal', message: 'The request has no client_id.' }
  const application = isClientIdWithinBound(clientId) ? await load(clientId) : undefined
  if (!application) return { kind: 'fatal', message: 'No application is registered with this client_id.' }
  // Before the redirect URI: nothing goes to a suspended application, not even an error.
  if (application.suspended_at !== null) {
    return { kind: 'fatal', message: 'This application has been suspended by the operator of this service.' }
  }
  // A machine acts for no user (RFC 6749 §4.4; docs/decisions/021-machine-tokens.md): it never asks one for access.
  if (application.kind === 'machine') {
    return { kind: 'fatal', message: 'This application is a machine client: it acts for no user and cannot ask you for access.' }
  }

  const sentRedirectUri = optional(reading.params, 'redirect_uri') ?? null
  if (sentRedirectUri !== null) {
    // A metadata document's client: exactly the URIs its document lists (docs/agents.md); a registered one: the sub-path rule.
    const exact = application.metadata_fetched_at !== null
    if (findMatchingRedirectUri(sentRedirectUri, application.redirect_uris, exact) === null) {
      return { kind: 'fatal', message: 'The redirect_uri is not covered by any redirect URI registered for this application.' }
    }
    return { kind: 'ok', application, redirectUri: sentRedirectUri, sentRedirectUri }
  }
  if (application.redirect_uris.length === 1)
    return { kind: 'ok', application, redirectUri: application.redirect_uris[0]!, sentRedirectUri }
  return { kind: 'fatal', message: 'This application has several redirect URIs, so the request must name one in redirect_uri.' }
}

/**
 * What validation reads besides the request: the issuer (RFC 9207), the scopes this Gatehouse
 * knows, and the database, for the resource servers of a request that names resources (RFC 8707).
 */
export interface RequestValidation {
  readonly issuer: string
  readonly scopes: ScopeVocabulary
  readonly db: Db
}

export async function validateAuthorizationRequest(
  reading: ParamReading,
  { issuer, scopes, db }: RequestValidation,
  load: ApplicationLoader,
  origin: RequestOrigin = 'plain',
): Promise<AuthorizeOutcome> {
  const raw = reading.params
  const single = (name: string): string | undefined => optional(raw, name)

  const client = await establishClient(reading, load)
  if (client.kind === 'fatal') return client
  const { application, redirectUri, sentRedirectUri } = client

  // Phase 2: everything else, reported to the client.
  const responseType = single('response_type')
  const state = single('state')
  const target = { redirectUri, state, mode: responseModeFor(responseType, single('response_mode')) }
  try {
    const checked = checkedParameters(reading, application, origin, scopes)
    // RFC 8707 §2: invalid_target for an identifier no usable resource server declared; read only
    // for a request that names resources, so any other costs nothing more.
    const targets = checked.resources === null ? [] : await resourceTargets(db, checked.resources)
    return {
      kind: 'ok',
      request: { application, redirectUri, sentRedirectUri, state, ...checked, resourceTargets: targets },
    }
  } catch (err) {
    if (err instanceof OAuthError) {
      return {
        kind: 'redirect',
        response: errorResponse(target, err, issuer),
        error: err,
        application,
        redirectUri,
        description: err.description,
      }
    }
    throw err
  }
}

/**
 * Phase 2 of validateAuthorizationRequest: every parameter but the client and its redirect URI,
 * checked in order; the first problem is thrown as the OAuth error the client receives.
 */
function checkedParameters(reading: ParamReading, application: AuthorizeApplication, origin: RequestOrigin, vocabulary: ScopeVocabulary) {
  const raw = reading.params
  const single = (name: string): string | undefined => optional(raw, name)
  const responseType = single('response_type')
  const first = reading.problems[0]
  if (first !== undefined) throw new InvalidRequestError(describeProblem(first.name, first.problem))
  refuseRequestObjects(single)
  if (origin === 'plain' && application.require_pushed_requests) {
    throw new InvalidRequestError(
      'This application requires pushed authorization requests (RFC 9126): push the request to the PAR endpoint first',
    )
  }
  const checkedType = checkResponseType(responseType, application)
  const responseMode = checkResponseMode(checkedType, single('response_mode'))
  const scoped = scopesAndNonce(vocabulary, raw.scope, single('nonce'), application)
  checkIdTokenRequest(checkedType, scoped)
  const { codeChallenge, codeChallengeMethod } = responseType === 'code' ? pkceOf(single, application) : NO_PKCE
  const { prompt, fresh } = promptOf(single('prompt'))
  const logIn = logInDemand(raw, single, fresh)
  const idTokenHint = single('id_token_hint')
  if (idTokenHint !== undefined && idTokenHint.length > ID_TOKEN_HINT_MAX_LENGTH) {
    throw new InvalidRequestError(`id_token_hint must be at most ${ID_TOKEN_HINT_MAX_LENGTH} characters`)
  }
  const dpopJkt = dpopJktOf(single('dpop_jkt'))
  const resources = parseResources(reading.resources)
  return {
    responseType: checkedType,
    responseMode,
    ...scoped,
    codeChallenge,
    codeChallengeMethod,
    prompt,
    logIn,
    idTokenHint,
    dpopJkt,
    resources,
  }
}

/** RFC 9449 §10 `dpop_jkt`: a base64url SHA-256 JWK thumbprint (RFC 7638), 43 characters. */
function dpopJktOf(value: string | undefined): string | null {
  if (value === undefined) return null
  if (!/^[A-Za-z0-9_-]{43}$/.test(value)) {
    throw new InvalidRequestError('dpop_jkt must be the base64url SHA-256 thumbprint of a JWK (43 characters, RFC 9449 §10)')
  }
  return value
}

/** The ID Token repeats the nonce; its length is bounded so a code row stays small. */
export const NONCE_MAX_LENGTH = 512

/** The scopes (RFC 6749 3.3) and OpenID Connect's nonce; throws the error the client is sent. */
function scopesAndNonce(
  vocabulary: ScopeVocabulary,
  scope: string | undefined,
  nonce: string | undefined,
  application: { allowed_scopes: readonly string[] },
): { scopes: string[]; nonce: string | undefined } {
  const scopes = vocabulary.parse(scope, application.allowed_scopes)
  if (nonce !== undefined && nonce.length > NONCE_MAX_LENGTH) {
    throw new InvalidRequestError(`nonce must be at most ${NONCE_MAX_LENGTH} characters`)
  }
  return { scopes, nonce }
}

/**
 * OpenID Connect Core 3.2.2.1: an ID Token answers an OpenID request only, and in the browser its
 * nonce is required, the relying party's one defence against a replayed ID Token (15.5.2).
 */
function checkIdTokenRequest(responseType: ResponseType, { scopes, nonce }: { scopes: string[]; nonce: string | undefined }): void {
  if (!issuesIdToken(responseType)) return
  if (!scopes.includes('openid')) throw new InvalidRequestError(`response_type=${responseType} requires the scope openid`)
  if (nonce === undefined) throw new InvalidRequestError(`response_type=${responseType} requires a nonce`)
}

const NO_PKCE = { codeChallenge: null, codeChallengeMethod: null } as const

/**
 * The code flow's PKCE parameters (RFC 7636 4.3); throws the error the client is sent. A public
 * client (native or single-page app) must send an S256 challenge: the verifier is what binds its
 * code to it at the token endpoint, in place of a secret (RFC 8252 8.1, RFC 9700 2.1.1,
 * docs/decisions/019-public-clients-and-consent.md).
 */
function pkceOf(
  single: (name: string) => string | undefined,
  application: { require_pkce: boolean; kind: ApplicationKind },
): { codeChallenge: string | null; codeChallengeMethod: ChallengeMethod | null } {
  const challenge = single('code_challenge')
  const method = single('code_challenge_method')
  const isPublic = isPublicKind(application.kind)
  if (isPublic && (challenge === undefined || method !== 'S256')) {
    throw new InvalidRequestError(
      'This application is public (a native or single-page app): send code_challenge with code_challenge_method=S256',
    )
  }
  if (challenge !== undefined) {
    const codeChallengeMethod = parseChallengeMethod(method)
    validateChallenge(challenge, codeChallengeMethod)
    return { codeChallenge: challenge, codeChallengeMethod }
  }
  if (method !== undefined) throw new InvalidRequestError('code_challenge_method was sent without code_challenge')
  // RFC 7636 4.4.1: a server requiring PKCE answers invalid_request.
  if (application.require_pkce) throw new InvalidRequestError('This application requires PKCE: send code_challenge (S256 recommended)')
  return NO_PKCE
}

/** Request objects (OpenID Connect Core 6) are not supported; PAR's request_uri is read before this. */
function refuseRequestObjects(single: (name: string) => string | undefined): void {
  if (single('request') !== undefined) throw new RequestNotSupportedError('Request objects (the request parameter) are not supported')
  if (single('request_uri') !== undefined) throw new RequestUriNotSupportedError('request_uri is not supported here')
}
