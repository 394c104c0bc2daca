import type { Db } from '../db/connect.js'
import type { Clock } from '../lib/clock.js'
import { CODE_FLOW_SETTINGS, type CodeFlowSettings } from '../repositories/authorization-codes.js'
import type { ApplicationCache } from './application-cache.js'
import { denyAuthorization, issueUnderRememberedConsent, mayUseRememberedConsent } from './authorization.js'
import { type AuthorizationRequest, type AuthorizeOutcome, validateAuthorizationRequest } from './authorize-request.js'
import { readParams } from './params.js'

/*
 * GET /oauth/authorize (RFC 6749 4.1.1, 4.2.1) as the protocol sees it: what to answer, given
 * the query and the logged-in user. The HTTP layer turns the answer into a page or a redirect.
 */

export type AuthorizeAnswer =
  /** Client or redirect URI unusable (RFC 6749 4.1.2.1): an error page, never a redirect. */
  | { kind: 'error-page'; message: string }
  | { kind: 'redirect'; location: string }
  /** Log in first, then back to the same request. */
  | { kind: 'login'; request: AuthorizationRequest }
  | { kind: 'consent'; request: AuthorizationRequest }

export interface AuthorizeContext {
  db: Db
  clock: Clock
  issuer: string
  applications: ApplicationCache
}

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
export async function answerAuthorizeRequest(ctx: AuthorizeContext, query: unknown, user: { id: string } | null): Promise<AuthorizeAnswer> {
  const reading = readParams(query)
  let tried: CodeFlowSettings | undefined
  const clientId = reading.params.client_id
  const cached = user && clientId !== undefined ? ctx.applications.get(clientId) : undefined
  if (user && cached) {
    const outcome = await validateAuthorizationRequest(reading, ctx.issuer, () => cached)
    if (outcome.kind === 'ok' && mayUseRememberedConsent(outcome.request)) {
      const location = await issueUnderRememberedConsent(ctx.db, outcome.request, user.id, ctx.clock(), ctx.issuer)
      if (location) return { kind: 'redirect', location }
      tried = outcome.request.application
    }
  }
  const outcome = await validateAuthorizationRequest(reading, ctx.issuer, (id) => ctx.applications.load(id))
  return answerValidated(ctx, outcome, user, tried)
}

/**
 * `tried`: the settings the remembered-consent statement already ran against and found no
 * grant under, so it is not run again for the same settings.
 */
async function answerValidated(
  ctx: AuthorizeContext,
  outcome: AuthorizeOutcome,
  user: { id: string } | null,
  tried: CodeFlowSettings | undefined,
): Promise<AuthorizeAnswer> {
  if (outcome.kind === 'fatal') return { kind: 'error-page', message: outcome.message }
  if (outcome.kind === 'redirect') return outcome
  const req = outcome.request
  if (!user) {
    // prompt=none forbids showing the log-in page (RFC 6749 has no login_required).
    if (req.prompt === 'none') return { kind: 'redirect', location: denyAuthorization(req, ctx.issuer, 'The user is not logged in') }
    return { kind: 'login', request: req }
  }
  if (mayUseRememberedConsent(req) && !(tried && sameCodeFlowSettings(tried, req.application))) {
    const location = await issueUnderRememberedConsent(ctx.db, req, user.id, ctx.clock(), ctx.issuer)
    if (location) return { kind: 'redirect', location }
  }
  if (req.prompt === 'none') {
    return { kind: 'redirect', location: denyAuthorization(req, ctx.issuer, 'The user has not granted this access') }
  }
  return { kind: 'consent', request: req }
}
