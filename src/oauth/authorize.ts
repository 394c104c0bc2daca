import { type AuditTrail, auditDetail } from '../audit/audit-log.js'
import type { Db } from '../db/connect.js'
import type { Clock } from '../lib/clock.js'
import { CODE_FLOW_SETTINGS, type CodeFlowSettings } from '../repositories/authorization-codes.js'
import { hasGrant } from '../repositories/grants.js'
import { isUuid } from '../lib/uuid.js'
import type { TokenQuota } from '../revocation/token-quota.js'
import type { ApplicationCache } from './application-cache.js'
import {
  type AuthorizingUser,
  type IssueQuotas,
  type Issued,
  approveAuthorization,
  denyAuthorization,
  findHeldRequest,
  heldRequestParams,
  holdForConsent,
  issueUnderRememberedConsent,
  mayUseRememberedConsent,
  releaseHeldRequest,
} from './authorization.js'
import {
  type AuthorizationRequest,
  type AuthorizeOutcome,
  type IdentityRequestOptions,
  LOGIN_ASKED_PARAM,
  errorResponse,
  establishClient,
  validateAuthorizationRequest,
} from './authorize-request.js'
import type { IdTokenHint } from './id-token-hint.js'
import {
  ConsentRequiredError,
  InteractionRequiredError,
  LoginRequiredError,
  type OAuthError,
  TemporarilyUnavailableError,
} from './errors.js'
import type { IdTokenIssuer } from './id-token.js'
import { type Params, optional, readParams } from './params.js'
import { type LogInAnswer, checkHint, logInFor, sessionSuffices } from './authorize-session.js'
import { findPushed, isPushedRequestUri } from './pushed-requests.js'
import { consumePushedRequest, extendPushedRequest } from '../repositories/pushed-requests.js'
import { LIFETIMES } from '../limits/policy.js'
import { type ClientResponse, describeRedirectTarget } from './redirect-uri.js'

/*
 * GET /oauth/authorize (RFC 6749 4.1.1, 4.2.1) as the protocol sees it: what to answer, given
 * the query and the logged-in user. The HTTP layer turns the answer into a page or a redirect.
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

export interface AuthorizeContext {
  /** Whether `openid` may be requested (signing keys exist; src/oauth/identity.ts). */
  identity: IdentityRequestOptions
  /** An id_token_hint's claims when Gatehouse signed it (src/oauth/id-token-hint.ts). */
  verifyHint: (hint: string) => Promise<IdTokenHint | undefined>
  db: Db
  clock: Clock
  issuer: string
  applications: ApplicationCache
  quotas: IssueQuotas
  /** Keeps MAX_TOKENS_PER_GRANT after a token-flow token is issued. */
  tokenQuota: Pick<TokenQuota, 'issued'>
  /** Signs the implicit flow's ID Tokens (OpenID Connect Core 3.2.2.10); absent without signing keys. */
  idTokens: IdTokenIssuer | undefined
}

/**
 * The logged-in user as the authorize request sees them: when the session was authenticated
 * (max_age, prompt=login), and whether REQUIRE_TWO_FACTOR asks them to enrol before going on
 * (prompt=none then answers interaction_required instead of the enrolment page).
 */
export type AuthorizeUser = (AuthorizingUser & { readonly authenticatedAt: Date; readonly mustEnrol?: boolean }) | null

/** RFC 6749 4.1.2.1 temporarily_unavailable: the user's codes for this client are over CODE_ISSUE_LIMIT. */
const OVER_CODE_QUOTA = 'Too many authorization requests for this application in the last minute; try again shortly'

/** Whether insertCodeUnderGrant would check the same things against `a` as against `b`. */
export function sameCodeFlowSettings(a: CodeFlowSettings, b: CodeFlowSettings): boolean {
  return CODE_FLOW_SETTINGS.every((column) => {
    const x = a[column]
    const y = b[column]
    return Array.isArray(x) && Array.isArray(y) ? x.length === y.length && x.every((v, i) => v === y[i]) : x === y
  })
}

/**
 * The answer to an authorization request. Remembered consent is the hot path: with the
 * application in the cache it costs one statement, which issues the code only while the
 * cached settings still hold (docs/decisions/004-caching-and-ttl-bounds.md). Every other
 * answer is worked out from a fresh read, so a stale copy can only ever fail to issue a code.
 */
export async function answerAuthorizeRequest(ctx: AuthorizeContext, query: unknown, user: AuthorizeUser): Promise<AuthorizeAnswer> {
  const reading = readParams(query)
  if (isPushedRequestUri(reading.params.request_uri)) return answerPushedRequest(ctx, reading.params, user)
  let tried: CodeFlowSettings | undefined
  const clientId = reading.params.client_id
  const cached = user && clientId !== undefined ? ctx.applications.get(clientId) : undefined
  if (user && cached) {
    const outcome = await validateAuthorizationRequest(reading, ctx.issuer, () => cached, 'plain', ctx.identity)
    // The session's checks are comparisons in memory: the hot path stays one statement.
    // An id_token_hint needs its signature checked: not the one-statement path.
    const hinted = outcome.kind === 'ok' && outcome.request.idTokenHint !== undefined
    if (
      outcome.kind === 'ok' &&
      !hinted &&
      mayUseRememberedConsent(outcome.request) &&
      sessionSuffices(outcome.request, user, ctx.clock())
    ) {
      const issued = await issueUnderRememberedConsent(ctx.db, outcome.request, user, ctx.clock(), ctx.issuer, ctx.quotas.codesPerMinute)
      if (issued.kind !== 'no-grant') return answerIssued(ctx, outcome.request, issued, user)
      tried = outcome.request.application
    }
  }
  const outcome = await validateAuthorizationRequest(reading, ctx.issuer, (id) => ctx.applications.load(id), 'plain', ctx.identity)
  return answerValidated(ctx, { outcome, params: reading.params }, user, tried)
}

/** RFC 9126 4: the request_uri is unknown, expired, used, or another client's; no redirect URI is known to be safe. */
const INVALID_REQUEST_URI: AuthorizeAnswer = {
  kind: 'error-page',
  message:
    'The pushed request is unknown, has expired or was used already (invalid_request_uri). Go back to the application and start again.',
}

/**
 * GET /oauth/authorize with client_id and a pushed request's request_uri (RFC 9126 4): the
 * pushed parameters only, for the client that pushed them; single use, so the request is
 * consumed by its first answer other than the log-in page (the log-in comes back here).
 */
async function answerPushedRequest(ctx: AuthorizeContext, query: Params, user: AuthorizeUser): Promise<AuthorizeAnswer> {
  const now = ctx.clock()
  const clientId = optional(query, 'client_id')
  const pushed = clientId === undefined ? undefined : await findPushed(ctx, query.request_uri!, now)
  if (!pushed || pushed.clientId !== clientId) return INVALID_REQUEST_URI
  const params = { ...pushed.params }
  const asked = query[LOGIN_ASKED_PARAM]
  if (asked !== undefined) params[LOGIN_ASKED_PARAM] = asked
  const outcome = await validateAuthorizationRequest(
    readParams(params),
    ctx.issuer,
    (id) => ctx.applications.load(id),
    'pushed',
    ctx.identity,
  )
  const back = { client_id: clientId, request_uri: query.request_uri! }
  const answer = await answerValidated(ctx, { outcome, params: back, claim: () => consumePushed(ctx, pushed.id, now) }, user, undefined)
  // The minute is for the client to send the browser here (RFC 9126 2.2); a person logging in
  // gets as long as a consent page stays open.
  if (answer.kind === 'login') await extendPushedRequest(ctx.db, pushed.id, new Date(now.getTime() + LIFETIMES.consentRequestMs))
  return answer
}

/**
 * `params`: the authorize request the log-in page comes back to. `claim`: for a pushed request,
 * consumes it before any answer but the log-in page; false when it was used meanwhile.
 * `tried`: the settings the remembered-consent statement already ran against and found no
 * grant under, so it is not run again for the same settings.
 */
async function answerValidated(
  ctx: AuthorizeContext,
  { outcome, params, claim }: { outcome: AuthorizeOutcome; params: Params; claim?: () => Promise<boolean> },
  user: AuthorizeUser,
  tried: CodeFlowSettings | undefined,
): Promise<AuthorizeAnswer> {
  if (outcome.kind === 'fatal') return { kind: 'error-page', message: outcome.message }
  const claimed = async () => claim === undefined || (await claim())
  if (outcome.kind === 'redirect') return (await claimed()) ? deliverError(ctx, outcome, user) : INVALID_REQUEST_URI
  const now = ctx.clock()
  const hint = await checkHint(ctx.verifyHint, outcome.request, user)
  if (hint.kind === 'invalid')
    return (await claimed()) ? deliverError(ctx, refusedFor(ctx, outcome.request, hint.error), user) : INVALID_REQUEST_URI
  const req = hint.request
  const needsLogIn = !user || !sessionSuffices(req, user, now)
  if (needsLogIn && req.prompt !== 'none') return logInFor(req, params, now, user !== null)
  if (!(await claimed())) return INVALID_REQUEST_URI
  if (!user || needsLogIn || hint.kind === 'other-user') {
    // prompt=none forbids showing the log-in page (OpenID Connect Core 3.1.2.6); a log-in that
    // did not bring the hint's user ends here too (3.1.2.1: "otherwise, it SHOULD return an error").
    const why =
      hint.kind === 'other-user'
        ? 'The user logged in is not the one id_token_hint names'
        : user
          ? 'The user must log in again'
          : 'The user is not logged in'
    return deliverError(ctx, refusedFor(ctx, req, new LoginRequiredError(why)), user)
  }
  if (req.prompt === 'none' && user.mustEnrol) {
    const error = new InteractionRequiredError('The user must set up a second factor first')
    return deliverError(ctx, refusedFor(ctx, req, error), user)
  }
  if (mayUseRememberedConsent(req) && !(tried && sameCodeFlowSettings(tried, req.application))) {
    const issued = await issueUnderRememberedConsent(ctx.db, req, user, ctx.clock(), ctx.issuer, ctx.quotas.codesPerMinute)
    if (issued.kind !== 'no-grant') return answerIssued(ctx, req, issued, user)
  }
  if (req.prompt === 'none') {
    return deliverError(ctx, refusedFor(ctx, req, new ConsentRequiredError('The user has not granted this access')), user)
  }
  return { kind: 'consent', request: req, heldId: await holdForConsent(ctx.db, req, user.id, now) }
}

type ErrorResponse = Extract<AuthorizeOutcome, { kind: 'redirect' }>

const consumePushed = (ctx: AuthorizeContext, id: string, now: Date) => consumePushedRequest(ctx.db, id, now)

function refusedFor(ctx: AuthorizeContext, req: AuthorizationRequest, error: OAuthError): ErrorResponse {
  const response = errorResponse({ redirectUri: req.redirectUri, state: req.state, mode: req.responseMode }, error, ctx.issuer)
  return { kind: 'redirect', response, error, application: req.application, redirectUri: req.redirectUri, description: error.description }
}

/** An issuing step's result as the answer; 'gone' and 'no-grant' are the callers' to handle first. */
async function answerIssued(
  ctx: AuthorizeContext,
  req: AuthorizationRequest,
  issued: Exclude<Issued, { kind: 'no-grant' | 'gone' }>,
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
async function deliverError(ctx: AuthorizeContext, error: ErrorResponse, user: { id: string } | null): Promise<AuthorizeAnswer> {
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

/**
 * POST /oauth/authorize: the user's answer to a consent page, which names the held request by
 * id and nothing else. The request is validated again against the application as it is now;
 * it is answered once, by the user it was held for. An approval is recorded in the audit log
 * (`grant.given`); remembered consent gives nothing new and records nothing.
 */
export async function answerConsent(
  ctx: AuthorizeContext,
  form: { heldId: unknown; decision: unknown },
  user: AuthorizingUser | null,
  audit: AuditTrail,
): Promise<AuthorizeAnswer> {
  const incomplete: AuthorizeAnswer = {
    kind: 'error-page',
    message: 'The consent form was incomplete. Go back to the application and start again.',
  }
  const gone: AuthorizeAnswer = {
    kind: 'error-page',
    message: 'This consent page was already answered or has expired. Go back to the application and start again.',
  }
  if (!isUuid(form.heldId) || (form.decision !== 'approve' && form.decision !== 'deny')) return incomplete
  const now = ctx.clock()
  if (!user) {
    // The session ended while the page was open: log in, then the same request again.
    const held = await findHeldRequest(ctx.db, form.heldId, now)
    return held ? { kind: 'login', returnTo: `/oauth/authorize?${new URLSearchParams(heldRequestParams(held))}` } : gone
  }
  const held = await findHeldRequest(ctx.db, form.heldId, now, user.id)
  if (!held) return gone
  const outcome = await validateAuthorizationRequest(
    readParams(heldRequestParams(held)),
    ctx.issuer,
    (id) => ctx.applications.load(id),
    'held',
    ctx.identity,
  )
  if (outcome.kind === 'fatal') return { kind: 'error-page', message: outcome.message }
  if (outcome.kind === 'redirect') return deliverError(ctx, outcome, user)
  const req = outcome.request
  if (form.decision === 'deny') {
    // The user's own answer goes back to the client whatever the trust (docs/decisions/005-trusted-redirects.md).
    return (await releaseHeldRequest(ctx.db, form.heldId, user.id, now))
      ? { kind: 'respond', response: denyAuthorization(req, ctx.issuer) }
      : gone
  }
  const issued = await approveAuthorization(ctx, req, user, now, ctx.issuer, form.heldId)
  if (issued.kind === 'gone' || issued.kind === 'no-grant') return gone
  if (issued.kind === 'issued') {
    await audit.record({
      event: 'grant.given',
      userId: user.id,
      application: { clientId: req.application.client_id, name: req.application.name },
      detail: auditDetail.grantGiven(req.scopes, req.responseType),
    })
  }
  return answerIssued(ctx, req, issued, user)
}

/**
 * Where the authorize request at `path` (a log-in page's `next`) would send the browser at the
 * end, if it names a usable client: the log-in form's CSP form-action must allow it, since
 * browsers apply form-action to every redirect that follows a form submission.
 */
export async function authorizeDestination(
  ctx: Pick<AuthorizeContext, 'applications' | 'db' | 'clock'>,
  path: string,
): Promise<string | undefined> {
  if (!path.startsWith('/oauth/authorize?')) return undefined
  const query: Record<string, string | string[]> = {}
  for (const [name, value] of new URLSearchParams(path.slice('/oauth/authorize?'.length))) {
    const seen = query[name]
    query[name] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value]
  }
  const requestUri = query.request_uri
  // A pushed request's redirect URI is in its stored parameters (RFC 9126 4).
  const pushed =
    typeof requestUri === 'string' && isPushedRequestUri(requestUri) ? await findPushed(ctx, requestUri, ctx.clock()) : undefined
  const client = await establishClient(readParams(pushed ? pushed.params : query), (id) => ctx.applications.load(id))
  return client.kind === 'ok' ? client.redirectUri : undefined
}
