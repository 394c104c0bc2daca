import type { FastifyInstance } from 'fastify'
import { InvalidRequestError } from '../../../oauth/index.js'
import type { Services } from '../../../services.js'
import authorizeRoutes from './authorize.js'
import authorizedApplicationsRoutes from './authorized-applications.js'
import deviceRoutes from './device.js'
import { noStore, setOAuthJsonErrorHandler } from './json-errors.js'
import logoutRoutes from './logout.js'
import metadataRoutes from './metadata.js'
import parRoutes from './par.js'
import revokeRoutes from './revoke.js'
import tokenRoutes from './token.js'

/**
 * Browser-facing OAuth pages: /oauth/authorize (log-in, consent), Authorized Applications, the
 * device flow's /device page (RFC 8628 3.3) and the end_session_endpoint (/oauth/logout).
 * Register inside the page context, which provides the session, CSRF and HTML error pages.
 */
export async function oauthPageRoutes(app: FastifyInstance, deps: Services): Promise<void> {
  await authorizeRoutes(app, deps)
  await authorizedApplicationsRoutes(app, deps)
  await deviceRoutes(app, deps)
  await logoutRoutes(app, deps)
}

/**
 * Client-facing endpoints: JSON in, JSON out, no session or cookies. Register at the root.
 */
export async function oauthApiRoutes(app: FastifyInstance, deps: Services): Promise<void> {
  await metadataRoutes(app, deps)
  await app.register(async (api) => {
    setOAuthJsonErrorHandler(api, deps.probes)

    // Spec 4.2: Content-Length is required, 0 when the parameters are in the query string.
    // Callback style, not async: every exchange and revocation runs this hook, and an async one
    // costs each of them a promise and a turn of the microtask queue (docs/decisions/007-one-statement-hot-paths.md).
    api.addHook('onRequest', function requireContentLength(request, reply, done) {
      if (request.method === 'POST' && request.headers['content-length'] === undefined) {
        noStore(reply)
          .code(411)
          .send({ error: 'invalid_request', error_description: 'A Content-Length header is required (0 when the body is empty)' })
        return
      }
      done()
    })

    // An empty body is "no parameters" whatever its declared type; a non-empty body must be
    // form-encoded (RFC 6749 4.1.3) or JSON.
    const parseJson = api.getDefaultJsonParser('error', 'error')
    api.removeContentTypeParser('application/json')
    api.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      if (body === '') return done(null, undefined)
      return parseJson(request, body as string, done)
    })
    api.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
      if (body === '') return done(null, undefined)
      done(new InvalidRequestError('Send the parameters as application/x-www-form-urlencoded or application/json'))
    })

    await tokenRoutes(api, deps)
    await revokeRoutes(api, deps)
    await parRoutes(api, deps)
  })
}
