import cookie from '@fastify/cookie'
import csrf from '@fastify/csrf-protection'
import formbody from '@fastify/formbody'
import helmet from '@fastify/helmet'
import view from '@fastify/view'
import { Eta } from 'eta'
import Fastify, { type FastifyInstance } from 'fastify'
import type { AppDeps } from './http/deps.js'
import { setHtmlErrorHandler } from './http/error-pages.js'
import { loggerOptions } from './http/logging.js'
import { registerMetrics } from './http/metrics.js'
import accountRoutes from './http/routes/account/index.js'
import consoleRoutes from './http/routes/console/index.js'
import healthRoutes from './http/routes/health.js'
import { oauthApiRoutes, oauthPageRoutes } from './http/routes/oauth/index.js'
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
  app.addHook('onSend', async (request, reply, payload) => {
    reply.header('x-request-id', request.id)
    return payload
  })

  await app.register(helmet, {
    contentSecurityPolicy: {
      directives: {
        defaultSrc: ["'self'"],
        styleSrc: ["'self'"],
        scriptSrc: ["'none'"],
        imgSrc: ["'self'", 'data:'],
        // Pages may never be framed (clickjacking on consent, RFC 9700 4.16).
        frameAncestors: ["'none'"],
        // The consent form's 303 goes to the client's redirect URI, which browsers check
        // against form-action; the consent route sets its own policy naming that origin.
        formAction: ["'self'"],
      },
    },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    strictTransportSecurity: deps.config.publicUrl.startsWith('https:'),
  })
  await app.register(cookie)
  await app.register(formbody)
  await app.register(csrf, {
    cookieKey: 'gatehouse_csrf',
    cookieOpts: { path: '/', httpOnly: true, sameSite: 'lax', secure: deps.config.cookieSecure },
    getToken: (request) => {
      const body = request.body as Record<string, unknown> | undefined
      return typeof body?._csrf === 'string' ? body._csrf : undefined
    },
  })
  await app.register(view, {
    engine: { eta: new Eta({ views: VIEWS_DIR, cache: true, autoEscape: true }) },
    root: VIEWS_DIR,
    layout: 'layouts/base.eta',
  })

  registerMetrics(app)
  await app.register(healthRoutes, deps)
  await app.register(staticRoutes)
  await app.register(oauthApiRoutes, deps)

  // Browser-facing pages: session, CSRF, HTML errors.
  await app.register(async (pages) => {
    registerSession(pages, deps)
    setHtmlErrorHandler(pages)
    await pages.register(accountRoutes, deps)
    await pages.register(consoleRoutes, deps)
    await pages.register(oauthPageRoutes, deps)
  })

  return app
}
