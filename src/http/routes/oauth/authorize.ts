import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApplicationCache } from '../../../oauth/application-cache.js'
import {
  approveAuthorization, denyAuthorization, issueUnderRememberedConsent, mayUseRememberedConsent,
} from '../../../oauth/authorization.js'
import {
  type AuthorizationRequest, type AuthorizeApplication, type AuthorizeOutcome, validateAuthorizationRequest,
} from '../../../oauth/authorize-request.js'
import { describeRedirectTarget } from '../../../oauth/redirect-uri.js'
import { SCOPE_DESCRIPTIONS } from '../../../oauth/scope.js'
import type { AppDeps } from '../../deps.js'
import { render } from '../../render.js'
import { safeNextPath } from '../../session.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
/** Fields of the consent form that are not authorization parameters. */
const FORM_FIELDS = new Set(['_csrf', 'decision', 'consent_nonce'])

function errorPage(request: FastifyRequest, reply: FastifyReply, message: string) {
  return render(request, reply, 'oauth/error.eta', { title: 'Authorization request refused', message }, 400)
}

/**
 * Log-in first, then back to this very authorize request (DESIGN.md rule 5). A consent POST
 * whose session ended meanwhile goes back to the equivalent GET.
 */
function toLogin(request: FastifyRequest, reply: FastifyReply, req: AuthorizationRequest) {
  const path = request.method === 'GET' ? request.url : `/oauth/authorize?${new URLSearchParams(req.params)}`
  const next = safeNextPath(path)
  return reply.redirect(next ? `/login?next=${encodeURIComponent(next)}` : '/login', 303)
}

/**
 * The consent page may not be framed (RFC 9700 4.16), and its form's redirect must be allowed
 * to reach the client: CSP form-action covers redirects that follow a form submission.
 */
function consentHeaders(reply: FastifyReply, redirectUri: string): void {
  const source = describeRedirectTarget(redirectUri).cspSource
  const current = String(reply.getHeader('content-security-policy') ?? "frame-ancestors 'none'")
  const formAction = `form-action 'self' ${source}`
  const csp = /form-action [^;]*/.test(current) ? current.replace(/form-action [^;]*/, formAction) : `${current};${formAction}`
  reply
    .header('content-security-policy', csp)
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
}

function consentPage(request: FastifyRequest, reply: FastifyReply, req: AuthorizationRequest) {
  consentHeaders(reply, req.redirectUri)
  return render(request, reply, 'oauth/consent.eta', {
    title: `Authorize ${req.application.name}`,
    appName: req.application.name,
    ownerEmail: req.application.owner_email,
    redirectHost: describeRedirectTarget(req.redirectUri).host,
    scopes: req.scopes.map((s) => ({ name: s, description: SCOPE_DESCRIPTIONS[s] })),
    tokenFlow: req.responseType === 'token',
    hidden: Object.entries(req.params).map(([name, value]) => ({ name, value })),
    nonce: randomUUID(),
  })
}

/** Whether insertCodeUnderGrant would check the same things against `a` as against `b`. */
function sameCodeFlowSettings(a: AuthorizeApplication, b: AuthorizeApplication): boolean {
  const same = (x: string[], y: string[]) => x.length === y.length && x.every((v, i) => v === y[i])
  return a.id === b.id && a.client_id === b.client_id && a.require_pkce === b.require_pkce &&
    same(a.redirect_uris, b.redirect_uris) && same(a.allowed_scopes, b.allowed_scopes)
}

/** GET and POST /oauth/authorize (spec 4.1, RFC 6749 4.1.1 / 4.2.1). */
export default async function authorizeRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const { db } = deps.database
  const issuer = deps.config.publicUrl

  const applications = new ApplicationCache(db, deps.clock)

  /**
   * The answer from a validation against a fresh read. `tried`: the application the
   * remembered-consent statement already ran against and found no grant, so it is not run
   * again for the same settings.
   */
  async function answerGet(request: FastifyRequest, reply: FastifyReply, outcome: AuthorizeOutcome, tried?: AuthorizeApplication) {
    if (outcome.kind === 'fatal') return errorPage(request, reply, outcome.message)
    if (outcome.kind === 'redirect') return reply.redirect(outcome.location, 302)
    const req = outcome.request
    const user = request.user
    if (!user) {
      // prompt=none forbids showing the log-in page (RFC 6749 has no login_required).
      if (req.prompt === 'none') return reply.redirect(denyAuthorization(req, issuer, 'The user is not logged in'), 302)
      return toLogin(request, reply, req)
    }
    if (mayUseRememberedConsent(req) && !(tried && sameCodeFlowSettings(tried, req.application))) {
      const location = await issueUnderRememberedConsent(db, req, user.id, deps.clock(), issuer)
      if (location) return reply.redirect(location, 302)
    }
    if (req.prompt === 'none') return reply.redirect(denyAuthorization(req, issuer, 'The user has not granted this access'), 302)
    return consentPage(request, reply, req)
  }

  app.get('/oauth/authorize', async (request, reply) => {
    const fresh = (clientId: string) => applications.load(clientId)
    if (!request.user) return answerGet(request, reply, await validateAuthorizationRequest(db, request.query, issuer, fresh))

    // Remembered consent, the hot path: the session lookup and one statement, the application
    // from the cache. A cached copy only ever issues a code (the statement re-checks its
    // settings); every other answer is worked out again from a fresh read.
    let cached = false
    const outcome = await validateAuthorizationRequest(db, request.query, issuer, (clientId) => {
      const hit = applications.get(clientId)
      cached = hit !== undefined
      return hit ?? applications.load(clientId)
    })
    if (outcome.kind !== 'ok' || !mayUseRememberedConsent(outcome.request)) {
      return answerGet(request, reply, cached ? await validateAuthorizationRequest(db, request.query, issuer, fresh) : outcome)
    }
    const location = await issueUnderRememberedConsent(db, outcome.request, request.user.id, deps.clock(), issuer)
    if (location) return reply.redirect(location, 302)
    const tried = outcome.request.application
    return answerGet(request, reply, cached ? await validateAuthorizationRequest(db, request.query, issuer, fresh) : outcome, tried)
  })

  // The consent answer. CSRF-protected; every authorization parameter is validated again, so
  // a tampered form can only ask for what a fresh authorize request could ask for.
  app.post<{ Body: Record<string, unknown> }>(
    '/oauth/authorize',
    { preHandler: app.csrfProtection },
    async (request, reply) => {
      const body = request.body ?? {}
      const authParams = Object.fromEntries(Object.entries(body).filter(([k]) => !FORM_FIELDS.has(k)))
      const outcome = await validateAuthorizationRequest(db, authParams, issuer)
      if (outcome.kind === 'fatal') return errorPage(request, reply, outcome.message)
      if (outcome.kind === 'redirect') return reply.redirect(outcome.location, 303)
      const req = outcome.request
      if (!request.user) return toLogin(request, reply, req)

      const decision = body.decision
      if (decision === 'deny') return reply.redirect(denyAuthorization(req, issuer), 303)
      const nonce = body.consent_nonce
      if (decision !== 'approve' || typeof nonce !== 'string' || !UUID.test(nonce)) {
        return errorPage(request, reply, 'The consent form was incomplete. Go back to the application and start again.')
      }
      const location = await approveAuthorization(db, req, request.user.id, deps.clock(), issuer, nonce)
      if (!location) {
        return errorPage(request, reply, 'This consent form was already answered. Go back to the application and start again.')
      }
      // 303, never 307: the browser must not re-POST the form to the client (RFC 9700 4.12).
      return reply.redirect(location, 303)
    },
  )
}
