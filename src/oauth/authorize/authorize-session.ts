import type { AuthorizationRequest } from './authorize-request.js'
import { LOGIN_ASKED_PARAM } from './login-demand.js'
import { InvalidRequestError, type OAuthError } from '../errors.js'
import type { IdTokenHint } from '../identity/id-token-hint.js'
import type { Params } from '../params.js'

/*
 * What an authorize request asks of the user's session (OpenID Connect Core 3.1.2.1): prompt=login
 * and max_age want a recent log-in, id_token_hint names whose session it must be; and the log-in
 * page that gets one.
 */

/** Log in first, then back to `returnTo` (src/oauth/authorize/authorize-answers.ts AuthorizeAnswer). */
export type LogInAnswer = { kind: 'login'; returnTo?: string; fresh?: boolean; hint?: string }

/**
 * Whether the session is recent enough for the request (OpenID Connect Core 3.1.2.1): prompt=login
 * wants a log-in after Gatehouse asked for one, max_age one at most that many seconds old (or
 * after Gatehouse asked, so max_age=0 ends too).
 */
export function sessionSuffices(req: AuthorizationRequest, user: { readonly authenticatedAt: Date }, now: Date): boolean {
  const { fresh, maxAgeSeconds, askedAt } = req.logIn
  if (!fresh && maxAgeSeconds === undefined) return true
  const authenticated = user.authenticatedAt.getTime()
  if (askedAt !== undefined && authenticated >= askedAt) return true
  if (fresh) return false
  return now.getTime() - authenticated <= maxAgeSeconds! * 1000
}

export type HintCheck =
  | { kind: 'invalid'; error: OAuthError }
  /** The request, asking for a fresh log-in when the hint names someone else than the session's user. */
  | { kind: 'ok'; request: AuthorizationRequest }
  /** The hint names someone else, and the log-in Gatehouse asked for this request did not change that. */
  | { kind: 'other-user'; request: AuthorizationRequest }

/**
 * id_token_hint (OpenID Connect Core 3.1.2.1): an ID Token Gatehouse issued to this client, or
 * invalid_request. When it names another user than the session's, the user logs in again, as
 * with prompt=login (prompt=none answers login_required instead, through the log-in check).
 */
export async function checkHint(
  verifyHint: (hint: string) => Promise<IdTokenHint | undefined>,
  req: AuthorizationRequest,
  user: { readonly id: string; readonly authenticatedAt: Date } | null,
): Promise<HintCheck> {
  if (req.idTokenHint === undefined) return { kind: 'ok', request: req }
  const hint = await verifyHint(req.idTokenHint)
  if (!hint || !hint.aud.includes(req.application.client_id)) {
    return { kind: 'invalid', error: new InvalidRequestError('id_token_hint is not an ID Token this server issued to this client') }
  }
  if (!user || hint.sub === user.id) return { kind: 'ok', request: req }
  const { askedAt } = req.logIn
  if (askedAt !== undefined && user.authenticatedAt.getTime() >= askedAt) {
    return { kind: 'other-user', request: req }
  }
  return { kind: 'ok', request: { ...req, logIn: { ...req.logIn, fresh: true } } }
}

/**
 * The log-in page for this request. When the request wants a recent log-in, the way back carries
 * the time Gatehouse asked (LOGIN_ASKED_PARAM), which the log-in that follows satisfies; unless
 * `stamp` is false: a pushed request's time is kept on the server (src/oauth/authorize/authorize.ts).
 */
export function logInFor(req: AuthorizationRequest, sent: Params, now: Date, overSession: boolean, stamp = true): LogInAnswer {
  const hint = req.logIn.hint
  if (!req.logIn.fresh && req.logIn.maxAgeSeconds === undefined) return { kind: 'login', hint }
  if (!stamp) return { kind: 'login', returnTo: `/oauth/authorize?${new URLSearchParams(sent)}`, fresh: overSession, hint }
  const params = new URLSearchParams(sent)
  // RFC 8707 §2: `resource` is kept apart from the other parameters (src/oauth/params.ts).
  for (const resource of req.resources ?? []) params.append('resource', resource)
  params.set(LOGIN_ASKED_PARAM, String(now.getTime()))
  return { kind: 'login', returnTo: `/oauth/authorize?${params}`, fresh: overSession, hint }
}
