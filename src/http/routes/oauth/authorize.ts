import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { approveAuthorization, denyAuthorization } from '../../../oauth/authorization.js'
import { type AuthorizationRequest, validateAuthorizationRequest } from '../../../oauth/authorize-request.js'
import { answerAuthorizeRequest } from '../../../oauth/authorize.js'
import { readParams } from '../../../oauth/params.js'
import { isUuid } from '../../../lib/uuid.js'
import { describeRedirectTarget } from '../../../oauth/redirect-uri.js'
import { SCOPE_DESCRIPTIONS } from '../../../oauth/scope.js'
import type { Services } from '../../../services.js'
import { render } from '../../render.js'
import { safeNextPath } from '../../session.js'

/** Fields of the consent form that are not authorization parameters. */
const FORM_FIELDS = new Set(['_csrf', 'decision', 'consent_nonce'])

function errorPage(request: FastifyRequest, reply: FastifyReply, message: string) {
  return render(request, reply, 'oauth/error.eta', { title: 'Authorization request refused', message }, 400)
}

/**
 * Log-in first, then back to this very authorize request (docs/architecture.md, "GET /oauth/authorize"). A consent POST
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
  reply.header('content-security-policy', csp).header('x-frame-options', 'DENY').header('referrer-policy', 'same-origin')
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

/** GET and POST /oauth/authorize (RFC 6749 4.1.1 / 4.2.1). */
export default async function authorizeRoutes(app: FastifyInstance, services: Services): Promise<void> {
  const { db } = services.database
  const issuer = services.config.publicUrl
  const applications = services.caches.applications
  const ctx = { db, clock: services.clock, issuer, applications }

  app.get('/oauth/authorize', async (request, reply) => {
    const answer = await answerAuthorizeRequest(ctx, request.query, request.user)
    switch (answer.kind) {
      case 'error-page':
        return errorPage(request, reply, answer.message)
      case 'redirect':
        return reply.redirect(answer.location, 302)
      case 'login':
        return toLogin(request, reply, answer.request)
      case 'consent':
        return consentPage(request, reply, answer.request)
    }
  })

  // The consent answer. CSRF-protected; every authorization parameter is validated again, so
  // a tampered form can only ask for what a fresh authorize request could ask for.
  app.post<{ Body: Record<string, unknown> }>('/oauth/authorize', { preHandler: app.csrfProtection }, async (request, reply) => {
    const body = request.body ?? {}
    const authParams = Object.fromEntries(Object.entries(body).filter(([k]) => !FORM_FIELDS.has(k)))
    const outcome = await validateAuthorizationRequest(readParams(authParams), issuer, (id) => applications.load(id))
    if (outcome.kind === 'fatal') return errorPage(request, reply, outcome.message)
    if (outcome.kind === 'redirect') return reply.redirect(outcome.location, 303)
    const req = outcome.request
    if (!request.user) return toLogin(request, reply, req)

    const decision = body.decision
    if (decision === 'deny') return reply.redirect(denyAuthorization(req, issuer), 303)
    const nonce = body.consent_nonce
    if (decision !== 'approve' || !isUuid(nonce)) {
      return errorPage(request, reply, 'The consent form was incomplete. Go back to the application and start again.')
    }
    const location = await approveAuthorization(db, req, request.user.id, services.clock(), issuer, nonce)
    if (!location) {
      return errorPage(request, reply, 'This consent form was already answered. Go back to the application and start again.')
    }
    // 303, never 307: the browser must not re-POST the form to the client (RFC 9700 4.12).
    return reply.redirect(location, 303)
  })
}
