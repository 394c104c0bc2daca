import { CODE_FLOW_SETTINGS, type CodeFlowSettings } from '../../repositories/authorization-codes.js'
import { holdForConsent, issueUnderRememberedConsent, mayUseRememberedConsent } from './authorization.js'
import { type AuthorizeOutcome, establishClient, validateAuthorizationRequest } from './authorize-request.js'
import { ConsentRequiredError, InteractionRequiredError, LoginRequiredError } from '../errors.js'
import { type Params, optional, readParams } from '../params.js'
import { checkHint, logInFor, sessionSuffices } from './authorize-session.js'
import { findPushed, isPushedRequestUri } from './pushed-requests.js'
import { consumePushedRequest } from '../../repositories/pushed-requests.js'
import {
  type AuthorizeAnswer,
  type AuthorizeContext,
  type AuthorizeUser,
  answerIssued,
  deliverError,
  refusedFor,
} from './authorize-answers.js'

export type { AuthorizeAnswer, AuthorizeContext, AuthorizeUser } from './authorize-answers.js'

/*
 * GET /oauth/authorize (RFC 6749 4.1.1, 4.2.1) as the protocol sees it: what to answer, given
 * the query and the logged-in user. The HTTP layer turns the answer into a page or a redirect.
 */

/** Whether insertCodeUnderGrant would check the same things against `a` as against `b`. */
export function sameCodeFlowSettings(a: CodeFlowSettings, b: CodeFlowSettings): boolean {
  return CODE_FLOW_SETTINGS.every((column) => {
    const x = a[column]
    const y = b[column]
    return Array.isArray(x) && Array.isArray(y) ? x.length === y.length && x.every((v, i) => v === y[i]) : x === y
  })
}

/** The session changed since it was read, or a cached read cannot answer (AuthorizeAnswer). */
const CONFIRM_SESSION: AuthorizeAnswer = { kind: 'confirm-session' }

/**
 * The answer to an authorization request. Remembered consent is the hot path: with the
 * application (and the session) in the caches it costs one statement, which issues the code
 * only while the cached settings and session still hold (docs/decisions/004-caching-and-ttl-bounds.md).
 * Every other answer is worked out from a fresh read, so a stale copy can only ever fail to
 * issue a code. A cached session that statement found live with its values is as good as a
 * fresh read; any other is sent back to be read again ('confirm-session').
 */
export async function answerAuthorizeRequest(ctx: AuthorizeContext, query: unknown, user: AuthorizeUser): Promise<AuthorizeAnswer> {
  const reading = readParams(query)
  if (isPushedRequestUri(reading.params.request_uri)) return user?.cached ? CONFIRM_SESSION : answerPushedRequest(ctx, reading.params, user)
  let tried: CodeFlowSettings | undefined
  const clientId = reading.params.client_id
  const cached = user && clientId !== undefined ? ctx.applications.get(clientId) : undefined
  if (user && cached) {
    const outcome = await validateAuthorizationRequest(reading, ctx, () => cached, 'plain')
    // The session's checks are comparisons in memory: the hot path stays one statement.
    // An id_token_hint needs its signature checked: not the one-statement path. Nor a user whom
    // REQUIRE_TWO_FACTOR stops (only prompt=none gets here then): no code, and interaction_required
    // from the path below, which the session read already decided (docs/accounts.md "Who must enrol").
    const hinted = outcome.kind === 'ok' && outcome.request.idTokenHint !== undefined
    if (
      outcome.kind === 'ok' &&
      !hinted &&
      !user.mustEnrol &&
      mayUseRememberedConsent(outcome.request) &&
      sessionSuffices(outcome.request, user, ctx.clock())
    ) {
      const issued = await issueUnderRememberedConsent(ctx.db, outcome.request, user, ctx.clock(), ctx.issuer, ctx.quotas.codesPerMinute)
      if (issued.kind === 'session-changed') return CONFIRM_SESSION
      if (issued.kind !== 'no-grant') return answerIssued(ctx, outcome.request, issued, user)
      tried = outcome.request.application
      user = { ...user, cached: undefined }
    }
  }
  if (user?.cached) return CONFIRM_SESSION
  const outcome = await validateAuthorizationRequest(reading, ctx, (id) => ctx.clientDirectory.resolve(id), 'plain')
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
 * consumed by its first answer other than the log-in page (the log-in comes back here). Its
 * lifetime counts from the push and nothing extends it (RFC 9126 2.2: expires_in), so a browser
 * coming back, logged in or not, cannot keep a request_uri alive.
 */
async function answerPushedRequest(ctx: AuthorizeContext, query: Params, user: AuthorizeUser): Promise<AuthorizeAnswer> {
  const now = ctx.clock()
  const clientId = optional(query, 'client_id')
  const pushed = clientId === undefined ? undefined : await findPushed(ctx, query.request_uri!, now)
  if (!pushed || pushed.clientId !== clientId) return INVALID_REQUEST_URI
  const validated = await validateAuthorizationRequest(readParams(pushed.params), ctx, (id) => ctx.clientDirectory.resolve(id), 'pushed')
  // prompt=login and max_age (OpenID Connect Core 3.1.2.1) are satisfied by a log-in after the
  // push, a time kept on the server: the query's LOGIN_ASKED_PARAM is the browser's word, and the
  // pushed parameters are the client's only.
  const askedAt = pushed.createdAt.getTime()
  const outcome =
    validated.kind === 'ok'
      ? { ...validated, request: { ...validated.request, logIn: { ...validated.request.logIn, askedAt } } }
      : validated
  const back = { client_id: clientId, request_uri: query.request_uri! }
  return answerValidated(
    ctx,
    { outcome, params: back, claim: () => consumePushed(ctx, pushed.id, now), askedAtKept: true },
    user,
    undefined,
  )
}

/**
 * `params`: the authorize request the log-in page comes back to. `claim`: for a pushed request,
 * consumes it before any answer but the log-in page; false when it was used meanwhile.
 * `askedAtKept`: the request's `logIn.askedAt` is the server's, so the way back to it carries none.
 * `tried`: the settings the remembered-consent statement already ran against and found no
 * grant under, so it is not run again for the same settings.
 */
async function answerValidated(
  ctx: AuthorizeContext,
  {
    outcome,
    params,
    claim,
    askedAtKept = false,
  }: { outcome: AuthorizeOutcome; params: Params; claim?: () => Promise<boolean>; askedAtKept?: boolean },
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
  if (needsLogIn && req.prompt !== 'none') return logInFor(req, params, now, user !== null, !askedAtKept)
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
    if (issued.kind === 'session-changed') return CONFIRM_SESSION
    if (issued.kind !== 'no-grant') return answerIssued(ctx, req, issued, user)
  }
  if (req.prompt === 'none') {
    return deliverError(ctx, refusedFor(ctx, req, new ConsentRequiredError('The user has not granted this access')), user)
  }
  return { kind: 'consent', request: req, heldId: await holdForConsent(ctx.db, req, user.id, now) }
}

const consumePushed = (ctx: AuthorizeContext, id: string, now: Date) => consumePushedRequest(ctx.db, id, now)

/**
 * Where the authorize request at `path` (a log-in page's `next`) would send the browser at the
 * end, if it names a usable client: the log-in form's CSP form-action must allow it, since
 * browsers apply form-action to every redirect that follows a form submission.
 */
export async function authorizeDestination(
  ctx: Pick<AuthorizeContext, 'clientDirectory' | 'db' | 'clock'>,
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
  const client = await establishClient(readParams(pushed ? pushed.params : query), (id) => ctx.clientDirectory.resolve(id))
  return client.kind === 'ok' ? client.redirectUri : undefined
}
