import type { FastifyInstance } from 'fastify'
import { hasControlCharacter } from '../../../lib/text.js'
import type { Services } from '../../../services.js'
import { emailField, fieldText, parseField } from '../../../accounts/index.js'
import { render } from '../../render.js'

/**
 * "Forgot your password?": GET /forgot-password, POST /forgot-password. The answer is the same
 * for an email with an account and one without (docs/accounts.md "Your account"); only a mail that could
 * not be sent, or the rate limit, answers otherwise, and those alike for both.
 */
export default async function forgotPasswordRoutes(app: FastifyInstance, deps: Services) {
  const title = 'Reset your password'

  app.get<{ Querystring: { email?: unknown } }>('/forgot-password', async (request, reply) => {
    const typed =
      typeof request.query.email === 'string' && !hasControlCharacter(request.query.email) ? request.query.email.slice(0, 254) : ''
    return render(request, reply, 'account/forgot-password.eta', { title, email: typed, errors: {}, sentTo: null })
  })

  app.post<{ Body: Record<string, unknown> }>('/forgot-password', { preHandler: app.csrfProtection }, async (request, reply) => {
    const typed = fieldText(request.body, 'email')
    const shown = hasControlCharacter(typed) ? '' : typed.slice(0, 254)
    const email = parseField(emailField, typed)
    if (!email.ok)
      return render(
        request,
        reply,
        'account/forgot-password.eta',
        { title, email: shown, errors: { email: email.error }, sentTo: null },
        400,
      )
    const result = await deps.accounts.requestPasswordReset(email.value, request.ip)
    if (result.kind === 'limited') {
      reply.header('retry-after', String(result.retryAfterSeconds))
      const formError = 'Too many reset requests. Wait a while and try again.'
      return render(request, reply, 'account/forgot-password.eta', { title, email: shown, errors: {}, formError, sentTo: null }, 429)
    }
    if (!result.mailSent) {
      const formError = 'We could not send the mail just now. Nothing was changed; please try again in a few minutes.'
      return render(request, reply, 'account/forgot-password.eta', { title, email: shown, errors: {}, formError, sentTo: null }, 503)
    }
    return render(request, reply, 'account/forgot-password.eta', { title, email: '', errors: {}, sentTo: email.value })
  })
}
