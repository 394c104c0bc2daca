import type { Db } from '../../db/connect.js'
import type { Clock } from '../../lib/clock.js'
import { hasGrant } from '../../repositories/grants.js'
import type { TokenQuota } from '../../revocation/token-quota.js'
import type { ApplicationCache } from '../clients/application-cache.js'
import type { ClientDirectory } from '../clients/client-directory.js'
import type { ScopeVocabulary } from '../grants/scope.js'
import type { SessionCheck } from '../../repositories/authorization-codes.js'
import type { AuthorizingUser, IssueQuotas, Issued } from './authorization.js'
import { type AuthorizationRequest, type AuthorizeOutcome, errorResponse } from './authorize-request.js'
import type { LogInAnswer } from './authorize-session.js'
import { type OAuthError, TemporarilyUnavailableError } from '../errors.js'
import type { IdTokenHint } from '../identity/id-token-hint.js'
import type { IdTokenIssuer } from '../identity/id-token.js'
import { type ClientResponse, describeRedirectTarget } from '../clients/redirect-uri.js'
import type { ResourceSettings } from '../resources/resource-indicators.js'

/*
 * What both steps of /oauth/authorize answer (src/oauth/authorize/authorize.ts for GET, the consent form
 * of src/oauth/authorize/consent-answer.ts for POST), what they work with, and how an issuing step's
 * result or an error response becomes the answer.
 */

export type AuthorizeAnswer =
  /** Client or redirect URI unusable (RFC 6749 4.1.2.1), or a consent form that cannot be answered: an error page, never a redirect. */
  | { kind: 'error-page'; message: string }
  /** A response for the client, in its response mode: a redirect, or the form_post page. */
  | { kind: 'respond'; response: ClientResponse }
  /**
   * An error response for a client that nobody here vouches for (RFC 9700 4.11.2): a page that
   * names the application and the destination, with a link (or for form_post a button) that
   * sends `response` when the user follows it.
   */
  | { kind: 'untrusted-error'; response: ClientResponse; applicationName: string; host: string; description: string }
  /**
   * Log in first, then back to `returnTo` (absent: the request's own URL). `fresh`: even over a
   * session (prompt=login, max_age); `hint`: the email to prefill (login_hint).
   */
  | LogInAnswer
  /** The consent page for the request, held under `heldId` until answered. */
  | { kind: 'consent'; request: AuthorizationRequest; heldId: string }
  /**
   * Read the session again and ask again: the user was the cached read and the answer is not
   * the one statement's, or the session changed since it was read (src/accounts/sessions/session-cache.ts).
   */
  | { kind: 'confirm-session' }

export interface AuthorizeContext {
  /** An id_token_hint's claims when Gatehouse signed it (src/oauth/identity/id-token-hint.ts). */
  verifyHint: (hint: string) => Promise<IdTokenHint | undefined>
  db: Db
  clock: Clock
  issuer: string
  /** The scopes this Gatehouse knows (src/oauth/grants/scope.ts). */
  scopes: ScopeVocabulary
  /** Copies for the remembered-consent path only (answerAuthorizeRequest); every other answer reads through clientDirectory. */
  applications: Pick<ApplicationCache, 'get'>
  /** The application a client_id names, as it is now (fetched for a metadata document's URL). */
  clientDirectory: Pick<ClientDirectory, 'resolve'>
  quotas: IssueQuotas
  /** Keeps MAX_TOKENS_PER_GRANT after a token-flow token is issued. */
  tokenQuota: Pick<TokenQuota, 'issued'>
  /** Signs the implicit flow's ID Tokens (OpenID Connect Core 3.2.2.10). */
  idTokens: IdTokenIssuer
  /** RESOURCE_TOKEN_TTL_SECONDS_DEFAULT, for a token the token flow issues for resources (RFC 8707). */
  resources: ResourceSettings
}

/**
 * The logged-in user as the authorize request sees them: when the session was authenticated
 * (max_age, prompt=login), whether REQUIRE_TWO_FACTOR asks them to enrol before going on
 * (prompt=none then answers interaction_required instead of the enrolment page), the session
 * the code statement re-checks (SessionCheck), and whether this is the process's cached read
 * (src/accounts/sessions/session-cache.ts), which only that statement may act on.
 */
export type AuthorizeUser =
  (AuthorizingUser & SessionCheck & { readonly authenticatedAt: Date; readonly mustEnrol?: boolean; readonly cached?: true }) | null

/** RFC 6749 4.1.2.1 temporarily_unavailable: the user's codes for this client are over CODE_ISSUE_LIMIT. */
const OVER_CODE_QUOTA = 'Too many authorization requests for this application in the last minute; try again shortly'

export type ErrorResponse = Extract<AuthorizeOutcome, { kind: 'redirect' }>

export function refusedFor(ctx: AuthorizeContext, req: AuthorizationRequest, error: OAuthError): ErrorResponse {
  const response = errorResponse({ redirectUri: req.redirectUri, state: req.state, mode: req.responseMode }, error, ctx.issuer)
  return { kind: 'redirect', response, error, application: req.application, redirectUri: req.redirectUri, description: error.description }
}

/** An issuing step's result as the answer; 'gone' and 'no-grant' are the callers' to handle first. */
export async function answerIssued(
  ctx: AuthorizeContext,
  req: AuthorizationRequest,
  issued: Exclude<Issued, { kind: 'no-grant' | 'gone' | 'session-changed' }>,
  user: { id: string },
): Promise<AuthorizeAnswer> {
  if (issued.kind === 'issued') return { kind: 'respond', response: issued.response }
  return deliverError(ctx, refusedFor(ctx, req, new TemporarilyUnavailableError(OVER_CODE_QUOTA, 60)), user)
}

/**
 * RFC 9700 4.11.2: anyone can register an application with any redirect URI, so an error
 * response is only sent automatically where someone vouches for the destination: an operator
 * verified the application, or the user is logged in and once granted this application access
 * (docs/decisions/005-trusted-redirects.md).
 * Otherwise the user sees where the error would go and may follow it; the client still learns
 * the error when they do.
 */
export async function deliverError(ctx: AuthorizeContext, error: ErrorResponse, user: { id: string } | null): Promise<AuthorizeAnswer> {
  if (error.application.verified_at !== null) return { kind: 'respond', response: error.response }
  if (user && (await hasGrant(ctx.db, user.id, error.application.id))) return { kind: 'respond', response: error.response }
  return {
    kind: 'untrusted-error',
    response: error.response,
    applicationName: error.application.name,
    host: describeRedirectTarget(error.redirectUri).host,
    description: error.description,
  }
}
