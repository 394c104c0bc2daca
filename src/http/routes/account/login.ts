import type { FastifyInstance, FastifyReply } from 'fastify'
import { authenticateUser } from '../../../accounts/authenticate.js'
import { parseCredentials } from '../../../accounts/credentials.js'
import { endSession, startSession } from '../../../accounts/sessions.js'
import { hasControlCharacter } from '../../../lib/text.js'
import { consumeAttempt } from '../../../limits/rate-limiter.js'
import { authorizeDestination } from '../../../oauth/authorize.js'
import type { Services } from '../../../services.js'
import { allowFormRedirectTo } from '../../form-action.js'
import { rotateCsrfSecret } from '../../page-security.js'
import { render } from '../../render.js'
import { safeNextPath, sessionIdOf, setSessionCookie } from '../../session.js'

const GENERIC_FAILURE = 'Incorrect email or password.'

export default async function loginRoutes(app: FastifyInstance, deps: Services) {
  const { db } = deps.database

  /**
   * A log-in on the way to an authorize request ends, through Gatehouse's redirects, at the
   * client (remembered consent, or an error it may receive): the form must be allowed to go there.
   */
  const allowNext = async (reply: FastifyReply, next: string | undefined) => {
    const destination = next === undefined ? undefined : await authorizeDestination(deps.caches, next)
    if (destination !== undefined) allowFormRedirectTo(reply, destination)
  }

  app.get<{ Querystring: { next?: string; email?: string; signed_up?: string } }>('/login', async (request, reply) => {
    const next = safeNextPath(request.query.next)
    if (request.user) return reply.redirect(next ?? '/applications', 303)
    await allowNext(reply, next)
    return render(request, reply, 'account/login.eta', {
      title: 'Log in',
      email: typeof request.query.email === 'string' && !hasControlCharacter(request.query.email) ? request.query.email.slice(0, 254) : '',
      next: next ?? '',
      signedUp: request.query.signed_up === '1',
      errors: {},
    })
  })

  app.post<{ Body: Record<string, unknown> }>('/login', { preHandler: app.csrfProtection }, async (request, reply) => {
    const body = request.body ?? {}
    const next = safeNextPath(body.next)
    const form = parseCredentials(body)
    const email = form.ok ? form.email : form.email
    const view = async (status: number, formError: string) => {
      await allowNext(reply, next)
      return render(
        request,
        reply,
        'account/login.eta',
        { title: 'Log in', email, next: next ?? '', signedUp: false, errors: {}, formError },
        status,
      )
    }

    // Answered before the rate limiter, whose keys are stored text: PostgreSQL refuses U+0000.
    if (!form.ok && form.malformed) return view(400, 'The email or password contains a control character. Type them again.')

    // Per IP and per account (RFC 9700 4.15-style brute-force protection); the account key is
    // counted whether or not the email exists, so a 429 reveals nothing either.
    const decision = await consumeAttempt(
      db,
      deps.clock,
      [`login:ip:${request.ip}`, `login:acct:${email.toLowerCase()}`],
      deps.config.loginRateLimit,
    )
    if (!decision.allowed) {
      reply.header('retry-after', String(decision.retryAfterSeconds))
      return view(429, 'Too many attempts. Wait a few minutes and try again.')
    }
    if (!form.ok) return view(401, GENERIC_FAILURE)

    const user = await authenticateUser(db, form.email, form.password)
    if (!user) return view(401, GENERIC_FAILURE)

    // A fresh session id and a fresh CSRF secret at every log-in defeat session fixation: nothing
    // a browser held before (possibly planted by someone else) is valid after (OWASP Session
    // Management Cheat Sheet, "Renew the Session ID After Any Privilege Level Change").
    const previous = sessionIdOf(request, deps)
    if (previous) await endSession(db, previous)
    const id = await startSession(db, user.id, deps.clock(), deps.config.sessionTtlMs)
    setSessionCookie(reply, deps, id)
    rotateCsrfSecret(request, reply, deps)
    return reply.redirect(next ?? '/applications', 303)
  })
}
