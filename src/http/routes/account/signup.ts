import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { parseCredentials } from '../../../accounts/index.js'
import { actorOf } from '../../audit.js'
import { render } from '../../render.js'
import { safeNextPath } from '../../session.js'

export default async function signupRoutes(app: FastifyInstance, deps: Services) {
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
    const result = await deps.accounts.signUp(actorOf(request), request.ip, form)
    if (result.kind === 'limited') {
      reply.header('retry-after', String(result.retryAfterSeconds))
      return render(
        request,
        reply,
        'account/signup.eta',
        { title: 'Sign up', email, next, errors: {}, formError: 'Too many attempts. Wait a few minutes and try again.' },
        429,
      )
    }
    if (result.kind === 'invalid')
      return render(request, reply, 'account/signup.eta', { title: 'Sign up', email, next, errors: result.errors }, 400)

    // Created or already registered: the same redirect either way (and one mail either way), so
    // sign-up cannot be used to find out which emails have accounts. The person logs in next.
    const { mailSent } = result
    const query = new URLSearchParams({
      signed_up: '1',
      email,
      ...(mailSent ? {} : { mail: 'failed' }),
      ...(next ? { next } : {}),
    })
    return reply.redirect(`/login?${query}`, 303)
  })
}
