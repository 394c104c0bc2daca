import type { FastifyInstance } from 'fastify'
import { parseCredentials } from '../../../accounts/credentials.js'
import { signUp } from '../../../accounts/signup.js'
import { clientAddressKey } from '../../../limits/client-address.js'
import { RATE_LIMITS, rateRule } from '../../../limits/policy.js'
import { takeSlots } from '../../../limits/rate-limiter.js'
import type { Services } from '../../../services.js'
import { auditTrail } from '../../audit.js'
import { render } from '../../render.js'
import { safeNextPath } from '../../session.js'

export default async function signupRoutes(app: FastifyInstance, deps: Services) {
  const { db } = deps.database

  app.get<{ Querystring: { next?: string } }>('/signup', async (request, reply) => {
    if (request.user) return reply.redirect('/applications', 303)
    return render(request, reply, 'account/signup.eta', {
      title: 'Sign up',
      email: '',
      next: safeNextPath(request.query.next) ?? '',
      errors: {},
    })
  })

  app.post<{ Body: Record<string, unknown> }>('/signup', { preHandler: app.csrfProtection }, async (request, reply) => {
    const body = request.body ?? {}
    const next = safeNextPath(body.next) ?? ''
    const form = parseCredentials(body, { newPassword: true })
    const email = form.email
    // Answered before the rate limiter, whose keys are stored text: PostgreSQL refuses U+0000.
    if (!form.ok && form.malformed) {
      return render(request, reply, 'account/signup.eta', { title: 'Sign up', email, next, errors: form.errors }, 400)
    }
    // Attempts per address only (README "Limits and quotas"): a key per email would let anyone
    // stop a stranger from signing up by trying their address first.
    const decision = await takeSlots(db, deps.clock, [rateRule(RATE_LIMITS.signup, clientAddressKey(request.ip), deps.config.limits)])
    if (!decision.allowed) {
      reply.header('retry-after', String(decision.retryAfterSeconds))
      return render(
        request,
        reply,
        'account/signup.eta',
        { title: 'Sign up', email, next, errors: {}, formError: 'Too many attempts. Wait a few minutes and try again.' },
        429,
      )
    }
    if (!form.ok) return render(request, reply, 'account/signup.eta', { title: 'Sign up', email, next, errors: form.errors }, 400)

    // Created or already registered: the same redirect either way (and one mail either way), so
    // sign-up cannot be used to find out which emails have accounts. The person logs in next.
    const { mailSent } = await signUp(deps.accounts, form.email, form.password, auditTrail(request, deps))
    const query = new URLSearchParams({
      signed_up: '1',
      email: form.email,
      ...(mailSent ? {} : { mail: 'failed' }),
      ...(next ? { next } : {}),
    })
    return reply.redirect(`/login?${query}`, 303)
  })
}
