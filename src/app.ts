import formbody from '@fastify/formbody'
import view from '@fastify/view'
import { Eta } from 'eta'
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type onSendHookHandler } from 'fastify'
import { endConnectionsOnClose } from './http/connections.js'
import { routerRefusalPage, setHtmlErrorHandler } from './http/error-pages.js'
import { requestIdOptions } from './http/logging.js'
import { pageSecurityHeaders, registerPageSecurity } from './http/page-security.js'
import { registerMetrics } from './http/metrics.js'
import accountRoutes from './http/routes/account/index.js'
import consoleRoutes from './http/routes/console/index.js'
import healthRoutes from './http/routes/health.js'
import { oauthApiRoutes, oauthPageRoutes } from './http/routes/oauth/index.js'
import resourceRoutes from './http/routes/resource/index.js'
import staticRoutes from './http/routes/static.js'
import { registerSession } from './http/session.js'
import { registerSecondFactorPolicy } from './http/second-factor-gate.js'
import adminRoutes from './http/routes/admin/index.js'
import { VIEWS_DIR, WEBAUTHN_BROWSER_SCRIPT } from './paths.js'
import { PASSKEYS_UNAVAILABLE } from './lib/passkey-availability.js'
import type { Services } from './services.js'
import { type Brand, logoUrl } from './lib/brand.js'
import type { TrustProxy } from './config.js'

/**
 * TRUST_PROXY as Fastify takes it: a list of addresses and CIDRs as is; a hop count as the
 * function Fastify itself makes of a number (the n hops nearest the server are proxies), since
 * its types omit the number form. Never `true` (src/config.ts says why).
 */
function fastifyTrustProxy(trust: TrustProxy): false | string[] | ((address: string, hop: number) => boolean) {
  if (trust === false) return false
  if (typeof trust === 'number') return (_address, hop) => hop < trust
  return [...trust]
}

/**
 * Assembles Gatehouse from its services (src/services.ts); never listens (src/server.ts does)
 * and builds nothing stateful itself.
 */
export async function buildApp(deps: Services): Promise<FastifyInstance> {
  const eta = new Eta({ views: VIEWS_DIR, cache: true, autoEscape: true })
  const app = createFastify(deps, eta)
  endConnectionsOnClose(app)
  app.decorateRequest('user', null)
  // Every response, API or page: its request id, and no MIME sniffing of JSON bodies.
  app.addHook('onRequest', function requestIdentity(request, reply, done) {
    reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff')
    done()
  })

  await app.register(formbody)

  const countUnmatched = registerMetrics(app, deps.probes, deps.config.metricsToken)
  for (const routes of [healthRoutes, oauthApiRoutes, resourceRoutes]) await routes(app, deps)
  await staticRoutes(app, { viewsDir: VIEWS_DIR, webauthnBrowserScript: WEBAUTHN_BROWSER_SCRIPT, brand: deps.config.brand })
  await app.register(async (pages) => registerPages(pages, deps, eta, countUnmatched))
  return app
}

/** The Fastify server and its options: logging, request ids, proxies, limits and timeouts. */
function createFastify(deps: Services, eta: Eta): FastifyInstance {
  const refusal = routerRefusalPage(eta, pageSecurityHeaders(deps.config), {
    serviceName: deps.config.serviceName,
    logoUrl: pageLogoUrl(deps.config.brand),
  })
  return Fastify({
    // The process's pino logger: Fastify makes each request's child of it (`request.log`, bound
    // to the request id) and writes its own request lines through it (docs/operating/backups-and-upgrades.md "Logging").
    loggerInstance: deps.log as FastifyBaseLogger,
    ...requestIdOptions(deps.config.trustProxy),
    trustProxy: fastifyTrustProxy(deps.config.trustProxy),
    bodyLimit: 64 * 1024,
    // Without these a slow client (slowloris) holds a connection as long as it likes: Fastify
    // sets requestTimeout and connectionTimeout to 0, "none" (OWASP Denial of Service Cheat
    // Sheet: a timeout on every connection). Values and reasons in docs/operating/configuration.md.
    requestTimeout: deps.config.http.requestTimeoutMs,
    connectionTimeout: deps.config.http.connectionTimeoutMs,
    keepAliveTimeout: deps.config.http.keepAliveTimeoutMs,
    // The router's refusals (a path that does not percent-decode, a parameter past its length limit)
    // are error pages like any unknown address, never Fastify's JSON error body.
    frameworkErrors: refusal,
  })
}

/** The logo every page's header shows (BRAND_LOGO_FILE), or null for the service name alone. */
function pageLogoUrl(brand: Brand): string | null {
  return brand.logo === undefined ? null : logoUrl(brand.logo)
}

/** Browser-facing pages, an encapsulated plugin of their own: views, session, CSRF, HTML errors. */
async function registerPages(pages: FastifyInstance, deps: Services, eta: Eta, countUnmatched: onSendHookHandler): Promise<void> {
  // Only pages render views. At the root, @fastify/view's onRequest hook (`reply.locals = {}`)
  // and its reply properties ran on every API request too (docs/decisions/016-hot-path-rules.md).
  await pages.register(view, {
    engine: { eta },
    root: VIEWS_DIR,
    layout: 'layouts/base.eta',
    // Every page may offer passkeys, or say why it cannot (src/lib/passkey-availability.ts).
    defaultContext: {
      serviceName: deps.config.serviceName,
      logoUrl: pageLogoUrl(deps.config.brand),
      passkeysAvailable: deps.passkeysAvailable,
      passkeysUnavailable: PASSKEYS_UNAVAILABLE,
    },
  })
  await registerPageSecurity(pages, deps)
  registerSession(pages, deps)
  registerSecondFactorPolicy(pages, deps)
  setHtmlErrorHandler(pages, deps.probes, deps.config.serviceName)
  // The not-found handler answers here (src/http/error-pages.ts), so /metrics counts it here.
  pages.addHook('onSend', countUnmatched)
  for (const routes of [accountRoutes, consoleRoutes, oauthPageRoutes, adminRoutes]) await routes(pages, deps)
}
