import type { FastifyError, FastifyInstance } from 'fastify'
import { type DatabaseAvailability, RETRY_AFTER_SECONDS, databaseUnavailable } from '../db/availability.js'
import { render } from './render.js'

/**
 * Page contexts answer every failure with an HTML error page: a 4xx says what was wrong; an
 * unreachable database is a 503 with Retry-After, told once per outage by `availability`;
 * anything else is logged and shown as a plain 500 without detail.
 */
export function setHtmlErrorHandler(app: FastifyInstance, availability: DatabaseAvailability): void {
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    if (databaseUnavailable(error)) {
      availability.refused(error)
      reply.header('retry-after', String(RETRY_AFTER_SECONDS))
      const message = 'Gatehouse cannot reach its database right now. Nothing was changed; please try again in a few seconds.'
      return render(request, reply, 'error.eta', { title: 'Temporarily unavailable', message }, 503)
    }
    const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500
    if (status === 500) request.log.error({ err: error }, 'page request failed')
    const message =
      status === 403 && error.code?.startsWith('FST_CSRF')
        ? 'This form has expired or was not sent from Gatehouse. Go back, reload the page and try again.'
        : status === 500
          ? 'Something went wrong on our side. Please try again.'
          : error.message
    return render(request, reply, 'error.eta', { title: status === 500 ? 'Server error' : 'Request refused', message }, status)
  })
  app.setNotFoundHandler(async (request, reply) =>
    render(request, reply, 'error.eta', { title: 'Not found', message: 'There is no page at this address.' }, 404),
  )
}
