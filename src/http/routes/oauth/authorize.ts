import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  type AuthorizeAnswer,
  type ClientResponse,
  type ScopeVocabulary,
  describeRedirectTarget,
  resourceNames,
  responseLocation,
} from '../../../oauth/index.js'
import type { Services } from '../../../services.js'
import { enrolmentDemand } from '../../../accounts/index.js'
import { actorOf } from '../../audit.js'
import { allowFormRedirectTo } from '../../form-action.js'
import { allowInlineScript } from '../../page-security.js'
import { render } from '../../render.js'
import { rereadSession, safeNextPath } from '../../session.js'
import { enrolFirst } from '../../second-factor-gate.js'

/**
 * The form_post page's one script (OAuth 2.0 Form Post Response Mode 2): it submits the form at
 * once; the CSP allows it by its hash alone, and the button does the same without scripts.
 */
const AUTO_SUBMIT = "document.getElementById('response-form').submit()"

const fieldsOf = (response: ClientResponse) => Object.entries(response.params).map(([name, value]) => ({ name, value }))

/**
 * A response for the client: a redirect (query, fragment), or for form_post a page whose form
 * posts the parameters to the redirect URI, which its CSP form-action allows.
 */
function respond(request: FastifyRequest, reply: FastifyReply, response: ClientResponse, redirectStatus: 302 | 303) {
  if (response.mode !== 'form_post') return reply.redirect(responseLocation(response), redirectStatus)
  allowFormRedirectTo(reply, response.redirectUri)
  allowInlineScript(reply, AUTO_SUBMIT)
  return render(request, reply, 'oauth/form-post.eta', {
    title: 'Returning to the application',
    host: describeRedirectTarget(response.redirectUri).host,
    action: response.redirectUri,
    fields: fieldsOf(response),
    autoSubmit: AUTO_SUBMIT,
  })
}

/** The protocol's answer as a page or a redirect. `redirectStatus`: 302 for GET, 303 after the consent POST. */
function send(request: FastifyRequest, reply: FastifyReply, answer: AuthorizeAnswer, redirectStatus: 302 | 303, scopes: ScopeVocabulary) {
  switch (answer.kind) {
    case 'error-page':
      return render(request, reply, 'oauth/error.eta', { title: 'Authorization request refused', message: answer.message }, 400)
    case 'untrusted-error':
      return untrustedErrorPage(request, reply, answer)
    case 'respond':
      return respond(request, reply, answer.response, redirectStatus)
    case 'login':
      return logInFirst(request, reply, answer)
    case 'confirm-session':
      return render(
        request,
        reply,
        'oauth/error.eta',
        { title: 'Authorization request refused', message: 'Your session changed while this request was answered. Try again.' },
        409,
      )
    case 'consent':
      return consentPage(request, reply, answer, scopes)
  }
}

/** An error for a client nobody vouches for: a page naming the destination (docs/decisions/005-trusted-redirects.md). */
function untrustedErrorPage(request: FastifyRequest, reply: FastifyReply, answer: Extract<AuthorizeAnswer, { kind: 'untrusted-error' }>) {
  const form = answer.response.mode === 'form_post' ? { action: answer.response.redirectUri, fields: fieldsOf(answer.response) } : undefined
  if (form) allowFormRedirectTo(reply, form.action)
  return render(
    request,
    reply,
    'oauth/untrusted-error.eta',
    {
      title: 'Authorization request refused',
      appName: answer.applicationName,
      host: answer.host,
      description: answer.description,
      location: form ? undefined : responseLocation(answer.response),
      form,
    },
    400,
  )
}

/** Log-in first, then back to this very authorize request (docs/architecture.md, "GET /oauth/authorize"). */
function logInFirst(request: FastifyRequest, reply: FastifyReply, answer: Extract<AuthorizeAnswer, { kind: 'login' }>) {
  const next = safeNextPath(answer.returnTo ?? request.url)
  const login = new URLSearchParams()
  if (next) login.set('next', next)
  // login_hint prefills the form; prompt=login and max_age show it over a session.
  if (answer.hint !== undefined) login.set('email', answer.hint)
  if (answer.fresh) login.set('fresh', '1')
  const query = login.toString()
  return reply.redirect(query ? `/login?${query}` : '/login', 303)
}

function consentPage(
  request: FastifyRequest,
  reply: FastifyReply,
  answer: Extract<AuthorizeAnswer, { kind: 'consent' }>,
  scopes: ScopeVocabulary,
) {
  const req = answer.request
  allowFormRedirectTo(reply, req.redirectUri)
  return render(request, reply, 'oauth/consent.eta', {
    title: `Authorize ${req.application.name}`,
    appName: req.application.name,
    // The owner's email is shown only once the owner has verified it; an unverified address
    // is anyone's claim (docs/oauth-endpoints.md "`GET /oauth/authorize`").
    ownerEmail: req.application.owner_email_verified ? (req.application.owner_email ?? undefined) : undefined,
    verified: req.application.verified_at !== null,
    // A client of a metadata document (docs/agents.md): nobody registered it, its client_id is a URL.
    documentHost: req.application.metadata_fetched_at === null ? null : new URL(req.application.client_id).host,
    homepageUrl: req.application.homepage_url,
    privacyPolicyUrl: req.application.privacy_policy_url,
    redirectHost: describeRedirectTarget(req.redirectUri).host,
    scopes: req.scopes.map((s) => ({ name: s, description: scopes.describe(s) })),
    // RFC 8707: the APIs the application asks to reach, by their resource servers' names.
    apis: resourceNames(req.resourceTargets),
    // An access token handed over in the browser: the token flow and `id_token token`.
    tokenFlow: req.responseType === 'token' || req.responseType === 'id_token token',
    heldId: answer.heldId,
  })
}

/** GET and POST /oauth/authorize (RFC 6749 4.1.1 / 4.2.1). */
export default async function authorizeRoutes(app: FastifyInstance, deps: Services): Promise<void> {
  const { oauth } = deps
  const answer = (request: FastifyRequest) => {
    const user = request.user
    // Only prompt=none gets this far while the policy asks to enrol (src/http/second-factor-gate.ts).
    const mustEnrol = user !== null && enrolmentDemand(deps.config.requireSecondFactor, user, 'authorize') !== undefined
    return oauth.authorize(request.query, user && mustEnrol ? { ...user, mustEnrol } : user)
  }

  // The consent flow is the second-factor policy's `authorize` area (src/http/second-factor-gate.ts).
  const config = { secondFactorArea: 'authorize' } as const
  app.get('/oauth/authorize', { config }, async (request, reply) => {
    let answered = await answer(request)
    // A cached session read, or a session that changed while the request was answered: read it
    // again and answer from that (src/accounts/sessions/session-cache.ts). Each pass reads the session
    // anew; a session that keeps changing under the request gets the error page.
    for (let pass = 0; answered.kind === 'confirm-session' && pass < 2; pass++) {
      await rereadSession(request, deps)
      if (await enrolFirst(request, reply, deps, 'authorize')) return reply
      answered = await answer(request)
    }
    return send(request, reply, answered, 302, deps.scopes)
  })

  // The consent answer: CSRF-protected, and it names the held request by id only. 303, never
  // 307: the browser must not re-POST the form to the client (RFC 9700 4.12).
  app.post<{ Body: Record<string, unknown> }>('/oauth/authorize', { config, preHandler: app.csrfProtection }, async (request, reply) => {
    const body = request.body ?? {}
    const answer = await oauth.answerConsent(actorOf(request), { heldId: body.request_id, decision: body.decision }, request.user)
    return send(request, reply, answer, 303, deps.scopes)
  })
}
