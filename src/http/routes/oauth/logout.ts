import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { type LogoutRequest, describeRedirectTarget } from '../../../oauth/index.js'
import type { Services } from '../../../services.js'
import { actorOf } from '../../audit.js'
import { allowFormRedirectTo } from '../../form-action.js'
import { render } from '../../render.js'
import { forgetSession, sessionIdOf } from '../../session.js'

/*
 * The end_session_endpoint (OpenID Connect RP-Initiated Logout 1.0 2; src/oauth/logout/logout.ts):
 * GET, and POST with a form as section 2 allows, both sent by the relying party's page. A hint
 * of this very session ends it at once; otherwise "Sign out of <service>?" asks, and its form
 * (CSRF-protected, same-origin only) carries the request's parameters to /oauth/logout/confirm,
 * which checks them all again. Routed only when Gatehouse is an OpenID Provider.
 */

const CONFIRM_PATH = '/oauth/logout/confirm'

/** The refusal page: nothing was ended, and nobody is sent anywhere. */
function refuse(request: FastifyRequest, reply: FastifyReply, message: string) {
  return render(request, reply, 'oauth/logout-error.eta', { title: 'Sign-out request refused', message }, 400)
}

/**
 * After the log-out (or with no session to end): 303 to the validated post_logout_redirect_uri
 * with its state when it is trusted, or the "You are signed out" page, which links to an
 * untrusted one by its host (docs/decisions/005-trusted-redirects.md).
 */
function finish(request: FastifyRequest, reply: FastifyReply, logout: LogoutRequest) {
  if (logout.redirectTo !== undefined && logout.trusted) return reply.redirect(logout.redirectTo, 303)
  const returnTo =
    logout.redirectTo === undefined ? undefined : { href: logout.redirectTo, host: describeRedirectTarget(logout.redirectTo).host }
  return render(request, reply, 'oauth/signed-out.eta', { title: 'You are signed out', appName: logout.application?.name, returnTo })
}

/** Ends the browser's session through the one log-out, then forgets its cookie and form tokens. */
async function endSession(request: FastifyRequest, reply: FastifyReply, deps: Services, logout: LogoutRequest) {
  const id = sessionIdOf(request, deps)
  if (id) await deps.accounts.logOut(actorOf(request), id, logout.application)
  if (id || request.user) forgetSession(request, reply, deps)
}

async function answerLogout(request: FastifyRequest, reply: FastifyReply, deps: Services, input: unknown) {
  const user = request.user
  const answer = await deps.identity.logoutRequest(input, user)
  if (answer.kind === 'refused') return refuse(request, reply, answer.message)
  const logout = answer.request
  if (!user || answer.atOnce) {
    await endSession(request, reply, deps, logout)
    return finish(request, reply, logout)
  }
  // The confirmation's POST ends in a redirect to a trusted relying party, which form-action must allow.
  if (logout.redirectTo !== undefined && logout.trusted) allowFormRedirectTo(reply, logout.redirectTo)
  return render(request, reply, 'oauth/logout-confirm.eta', {
    title: `Sign out of ${deps.config.serviceName}?`,
    appName: logout.application?.name,
    host: logout.redirectTo === undefined ? undefined : describeRedirectTarget(logout.redirectTo).host,
    trusted: logout.trusted,
    action: CONFIRM_PATH,
    fields: Object.entries(logout.carried).map(([name, value]) => ({ name, value })),
  })
}

export default async function logoutRoutes(app: FastifyInstance, deps: Services): Promise<void> {
  app.get('/oauth/logout', (request, reply) => answerLogout(request, reply, deps, request.query))
  // Section 2: the relying party may POST the same parameters as a form from its own page.
  app.post('/oauth/logout', { config: { crossSiteForm: true } }, (request, reply) => answerLogout(request, reply, deps, request.body))

  // "Sign out": the person's own answer on Gatehouse's page; the request is validated again.
  app.post(CONFIRM_PATH, { preHandler: app.csrfProtection }, async (request, reply) => {
    const answer = await deps.identity.logoutRequest(request.body, request.user)
    if (answer.kind === 'refused') return refuse(request, reply, answer.message)
    await endSession(request, reply, deps, answer.request)
    return finish(request, reply, answer.request)
  })
}
