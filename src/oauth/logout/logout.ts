import { isClientIdWithinBound } from '../../lib/tokens.js'
import type { AuthorizeApplication } from '../authorize/authorize-request.js'
import { type IdTokenHint, verifyIdTokenHint } from '../identity/id-token-hint.js'
import { type Params, describeProblem, optional, readParams } from '../params.js'
import { buildRedirect } from '../clients/redirect-uri.js'
import type { SigningKeys } from '../identity/signing-keys.js'

/*
 * The end_session_endpoint, /oauth/logout (OpenID Connect RP-Initiated Logout 1.0 2, 3), as the
 * protocol sees it: which application asks, whether its id_token_hint is one Gatehouse signed,
 * and where the browser may go afterwards. The session itself ends through the one log-out
 * (src/accounts/sessions/sessions.ts logOut), called by the edge once this says the request is sound.
 *
 * A post_logout_redirect_uri is followed only when it equals, character for character, one the
 * application identified by client_id or by the hint's aud registered (section 3: "MUST have
 * been previously registered"); anything else is an error page and nothing is ended, so this
 * endpoint never redirects anywhere nobody registered (RFC 9700 4.11).
 *
 * Registered is not trusted: anyone may register an application and its post-logout URI, so the
 * browser is sent there on its own only when someone vouches for it (section 3: the OP may ask
 * the End-User; docs/decisions/005-trusted-redirects.md): an operator verified the application,
 * or the hint was issued to it for the browser's own user, who holds a grant for it. Otherwise
 * the "signed out" page names the destination host, with a link the person may follow.
 */

/** The end_session_endpoint's path (discovery's end_session_endpoint). */
export const LOGOUT_PATH = '/oauth/logout'

export interface LogoutContext {
  keys: SigningKeys
  issuer: string
  /** The application by client_id, fresh from the database. */
  load: (clientId: string) => Promise<AuthorizeApplication | undefined>
  /** Whether the user once granted the application access (src/repositories/grants.ts hasGrant). */
  hasGrant: (userId: string, applicationId: string) => Promise<boolean>
}

/** A sound log-out request. */
export interface LogoutRequest {
  /** The relying party asking, when client_id or the hint names one that exists. */
  application: { clientId: string; name: string } | undefined
  /** The verified id_token_hint, if sent. */
  hint: IdTokenHint | undefined
  /** The validated post_logout_redirect_uri with `state` appended; undefined: the "signed out" page. */
  redirectTo: string | undefined
  /** Whether the browser is sent to `redirectTo` on its own; otherwise the page links to it. */
  trusted: boolean
  /** The request's own parameters, for the confirmation form to send again. */
  carried: Params
}

export type LogoutOutcome = { kind: 'ok'; request: LogoutRequest } | { kind: 'refused'; message: string }

/** The parameters section 2 defines that Gatehouse reads; ui_locales and logout_hint are accepted and ignored. */
const CARRIED = ['id_token_hint', 'client_id', 'post_logout_redirect_uri', 'state'] as const

/** Bounds the Location header a state makes; an ID Token's length is bounded in src/oauth/identity/id-token-hint.ts. */
export const LOGOUT_STATE_MAX_LENGTH = 2048

const refused = (message: string): LogoutOutcome => ({ kind: 'refused', message })

/** The browser's user, as the log-out sees them: its id, and the session's `sid` when known. */
export type LogoutSession = { id: string; sid?: string } | null

/**
 * Validates a log-out request's parameters (the query of a GET, the form of a POST) for the
 * browser's `session`, read before anything is ended.
 */
export async function validateLogoutRequest(ctx: LogoutContext, input: unknown, session: LogoutSession): Promise<LogoutOutcome> {
  const reading = readParams(input)
  if (reading.notAnObject) return refused('The sign-out request could not be read.')
  for (const { name, problem } of reading.problems) {
    if ((CARRIED as readonly string[]).includes(name)) return refused(`${describeProblem(name, problem)}.`)
  }
  const carried: Params = {}
  for (const name of CARRIED) {
    const value = optional(reading.params, name)
    if (value !== undefined) carried[name] = value
  }
  const state = carried.state
  if (state !== undefined && state.length > LOGOUT_STATE_MAX_LENGTH) {
    return refused(`The state parameter is longer than ${LOGOUT_STATE_MAX_LENGTH} characters.`)
  }
  const hint = carried.id_token_hint === undefined ? undefined : await verifyIdTokenHint(ctx, carried.id_token_hint)
  if (carried.id_token_hint !== undefined && !hint) {
    return refused(`The id_token_hint is not an ID Token this server issued, so the request cannot be trusted.`)
  }
  // Section 2: "If both client_id and id_token_hint are present, the OP MUST verify that the
  // Client Identifier matches the one used when issuing the ID Token."
  if (carried.client_id !== undefined && hint && !hint.aud.includes(carried.client_id)) {
    return refused('The client_id is not the application the id_token_hint was issued to.')
  }
  const clientId = carried.client_id ?? (hint?.aud.length === 1 ? hint.aud[0] : undefined)
  const application = clientId !== undefined && isClientIdWithinBound(clientId) ? await ctx.load(clientId) : undefined
  if (carried.client_id !== undefined && !application) return refused('No application is registered with this client_id.')
  const target = carried.post_logout_redirect_uri
  if (target === undefined) return ok(application, hint, undefined, false, carried)
  if (!application) {
    return refused('The post_logout_redirect_uri can be followed only with the client_id or id_token_hint of its application.')
  }
  if (application.suspended_at !== null) return refused('This application has been suspended by the operator of this service.')
  if (!application.post_logout_redirect_uris.includes(target)) {
    return refused('The post_logout_redirect_uri is not one the application registered, so you have not been sent there.')
  }
  const redirectTo = state === undefined ? target : buildRedirect(target, { state }, 'query')
  return ok(application, hint, redirectTo, await vouchedFor(ctx, application, hint, session), carried)
}

/**
 * Whether someone vouches for sending the browser to the application's post-logout URI
 * unasked (docs/decisions/005-trusted-redirects.md): an operator verified the application, or
 * the hint is an ID Token issued to it for the browser's own user (expired or not, as section 2
 * allows), who granted it access. A hint alone proves nothing: anyone can sign in to their own
 * application and send its ID Token along.
 */
async function vouchedFor(
  ctx: LogoutContext,
  application: AuthorizeApplication,
  hint: IdTokenHint | undefined,
  session: LogoutSession,
): Promise<boolean> {
  if (application.verified_at !== null) return true
  if (!session || !hint || hint.sub !== session.id || !hint.aud.includes(application.client_id)) return false
  return ctx.hasGrant(session.id, application.id)
}

function ok(
  application: AuthorizeApplication | undefined,
  hint: IdTokenHint | undefined,
  redirectTo: string | undefined,
  trusted: boolean,
  carried: Params,
): LogoutOutcome {
  const named = application && { clientId: application.client_id, name: application.name }
  return { kind: 'ok', request: { application: named, hint, redirectTo, trusted, carried } }
}

/**
 * Whether the hint names the browser's own session, so the log-out needs no confirmation
 * (section 2: the OP asks the End-User "if the id_token_hint does not match the current
 * session"). The ID Token's `sid` decides when it has one: an ID Token of an earlier session of
 * the same person does not end this one unasked. Without `sid`, its `sub` must be the user.
 */
export function hintMatchesSession(hint: IdTokenHint | undefined, session: { id: string; sid?: string }): boolean {
  if (!hint) return false
  if (hint.sid !== undefined) return session.sid !== undefined && hint.sid === session.sid
  return hint.sub === session.id
}
