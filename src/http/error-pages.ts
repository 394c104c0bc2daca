import type { Eta } from 'eta'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Probes } from '../services.js'
import { RETRY_AFTER_SECONDS, databaseUnavailable } from '../db/index.js'
import { render } from './render.js'

/**
 * Page contexts answer every failure with an HTML error page: a 4xx says what was wrong; an
 * unreachable database is a 503 with Retry-After, told once per outage through `probes`;
 * anything else is logged and shown as a plain 500 without detail.
 */
export function setHtmlErrorHandler(app: FastifyInstance, probes: Pick<Probes, 'refused'>, serviceName: string): void {
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    if (databaseUnavailable(error)) {
      probes.refused(error)
      reply.header('retry-after', String(RETRY_AFTER_SECONDS))
      const message = `${serviceName} cannot reach its database right now. Nothing was changed; please try again in a few seconds.`
      return render(request, reply, 'error.eta', { title: 'Temporarily unavailable', message }, 503)
    }
    const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500
    if (status === 500) request.log.error({ err: error }, 'page request failed')
    const message =
      status === 403 && error.code?.startsWith('FST_CSRF')
        ? `This form has expired or was not sent from ${serviceName}. Go back, reload the page and try again.`
        : status === 500
          ? 'Something went wrong on our side. Please try again.'
          : error.message
    return render(request, reply, 'error.eta', { title: status === 500 ? 'Server error' : 'Request refused', message }, status)
  })
  app.setNotFoundHandler(async (request, reply) =>
    render(request, reply, 'error.eta', { title: 'Not found', message: 'There is no page at this address.' }, 404),
  )
}

/**
 * The router's own refusals, made before any route, hook or error handler runs: a path whose
 * percent-encoding does not decode (`/%zz`, `/applications/%C3`: FST_ERR_BAD_URL, 400) and a path
 * parameter longer than the router's limit (FST_ERR_MAX_PARAM_LENGTH, 414). Fastify's default
 * answers them with its JSON error body. No route has such an address, so they are answered as
 * every other unknown address is: an error page with the pages' security headers (for Fastify's
 * `frameworkErrors` option). The reply here is Fastify's bare one, without the view decorator or a
 * session, so the page is rendered with the app's Eta directly, logged out.
 */
export function routerRefusalPage(
  eta: Eta,
  pageHeaders: ReadonlyArray<readonly [string, string]>,
  brand: { serviceName: string; logoUrl: string | null },
) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500
    if (status === 500) request.log.error({ err: error }, 'request refused by the router')
    const message =
      status === 500
        ? 'Something went wrong on our side. Please try again.'
        : status === 414
          ? 'There is no page at this address: part of it is too long.'
          : 'There is no page at this address: it contains a broken %-escape.'
    const page = { title: status === 500 ? 'Server error' : 'Request refused', message, viewer: null, csrfToken: '', ...brand }
    const html = eta.render('layouts/base.eta', { ...page, body: eta.render('error.eta', page) })
    for (const [name, value] of pageHeaders) reply.header(name, value)
    reply.header('x-request-id', request.id).header('cache-control', 'no-store').code(status).type('text/html; charset=utf-8').send(html)
  }
}
