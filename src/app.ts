import formbody from '@fastify/formbody'
import view from '@fastify/view'
import { Eta } from 'eta'
import Fastify, { type FastifyInstance } from 'fastify'
import type { AppDeps } from './http/deps.js'
import { setHtmlErrorHandler } from './http/error-pages.js'
import { registerPageSecurity } from './http/page-security.js'
import { loggerOptions } from './http/logging.js'
import { registerMetrics } from './http/metrics.js'
import accountRoutes from './http/routes/account/index.js'
import consoleRoutes from './http/routes/console/index.js'
import healthRoutes from './http/routes/health.js'
import { oauthApiRoutes, oauthPageRoutes } from './http/routes/oauth/index.js'
import resourceRoutes from './http/routes/resource/index.js'
import staticRoutes from './http/routes/static.js'
import { registerSession } from './http/session.js'
import { VIEWS_DIR } from './paths.js'

/** Assembles Gatehouse; never listens (src/server.ts does). */
export async function buildApp(deps: AppDeps, options: { logStream?: NodeJS.WritableStream } = {}): Promise<FastifyInstance> {
  const app = Fastify({
    ...loggerOptions(deps.config.logLevel, options.logStream),
    trustProxy: deps.config.trustProxy,
    bodyLimit: 64 * 1024,
  })
  app.decorateRequest('user', null)
  // Every response, API or page: its request id, and no MIME sniffing of JSON bodies.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff')
    done()
  })

  await app.register(formbody)
  await app.register(view, {
    engine: { eta: new Eta({ views: VIEWS_DIR, cache: true, autoEscape: true }) },
    root: VIEWS_DIR,
    layout: 'layouts/base.eta',
  })

  registerMetrics(app)
  await app.register(healthRoutes, deps)
  await app.register(staticRoutes)
  await app.register(oauthApiRoutes, deps)
  await app.register(resourceRoutes, deps)

  // Browser-facing pages: session, CSRF, HTML errors.
  await app.register(async (pages) => {
    await registerPageSecurity(pages, deps)
    registerSession(pages, deps)
    setHtmlErrorHandler(pages)
    await pages.register(accountRoutes, deps)
    await pages.register(consoleRoutes, deps)
    await pages.register(oauthPageRoutes, deps)
  })

  return app
}
