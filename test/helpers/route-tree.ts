import type { FastifyInstance } from 'fastify'

/** A route's hooks by kind (onRequest, preHandler, onSend…), each the hook functions' names in the order they run. */
export type RouteHooks = Record<string, string[]>

/**
 * Every route of `app` as "METHOD pattern", with its hooks, read from Fastify's
 * `printRoutes({ commonPrefix: false, includeHooks: true })`. Each node of the router's tree is a
 * line, indented four characters a level, with the methods it serves in brackets; a node's
 * pattern is its parent's followed by its own text. A node whose methods differ in their hooks is
 * repeated without the branch characters, once per set of methods, and each set is followed by
 * its hooks: `• (onRequest) ["name()", …]`, an unnamed function being `anonymous()`.
 *
 * The text is Fastify's, not an API: a parse that finds nothing throws, so that no test passes by
 * checking no routes.
 */
export function routeTree(app: FastifyInstance): Map<string, RouteHooks> {
  const routes = new Map<string, RouteHooks>()
  const patterns: string[] = []
  let current: RouteHooks[] = []
  for (const line of app.printRoutes({ commonPrefix: false, includeHooks: true }).split('\n')) {
    const node = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line)
    const again = /^((?:[│ ] {3})*)([^•│├└ ].*?) \(([A-Z, ]+)\)$/.exec(line)
    const hook = /^[│ ]*• \((\w+)\) (\[.*\])$/.exec(line)
    if (node) {
      const depth = node[1]!.length / 4
      patterns.length = depth
      patterns.push(`${patterns[depth - 1] ?? ''}${node[2]}`)
    }
    const methods = (node ?? again)?.[3]
    if (node || again) {
      current = (methods?.split(', ') ?? []).map((method) => {
        const hooks: RouteHooks = {}
        routes.set(`${method} ${patterns[patterns.length - 1]}`, hooks)
        return hooks
      })
    } else if (hook) {
      const names = (JSON.parse(hook[2]!) as string[]).map((name) => name.replace(/\(\)$/, ''))
      for (const hooks of current) hooks[hook[1]!] = names
    }
  }
  if (!routes.has('POST /oauth/token') || !routes.has('GET /applications/:id') || routes.size < 50) {
    throw new Error(`the route tree did not parse: ${JSON.stringify([...routes.keys()])}`)
  }
  return routes
}

export type RouteAnswer = 'oauth-json' | 'json' | 'page-json' | 'other'

/**
 * The routes that answer other than with an HTML page, by "METHOD pattern", and what they
 * answer: every route outside the page context, and the page context's JSON endpoints of the
 * passkey script ('page-json'). Kept by hand, apart from what Fastify reports, so that a test
 * can check each route's context against it (test/integration/route-hooks.test.ts) and the fuzz
 * can judge each answer (test/integration/fuzz/harness.ts).
 */
export const API_ROUTES: ReadonlyMap<string, RouteAnswer> = new Map<string, RouteAnswer>([
  ['POST /oauth/token', 'oauth-json'],
  ['POST /oauth/revoke', 'oauth-json'],
  ['POST /oauth/par', 'oauth-json'],
  ['POST /oauth/device_authorization', 'oauth-json'],
  ['POST /oauth/introspect', 'oauth-json'],
  ['GET /oauth/token/info', 'oauth-json'],
  ['HEAD /oauth/token/info', 'oauth-json'],
  ['GET /oauth/revocations/stream', 'oauth-json'],
  ['HEAD /oauth/revocations/stream', 'oauth-json'],
  ['GET /oauth/userinfo', 'oauth-json'],
  ['HEAD /oauth/userinfo', 'oauth-json'],
  ['POST /oauth/userinfo', 'oauth-json'],
  ['GET /.well-known/openid-configuration', 'json'],
  ['HEAD /.well-known/openid-configuration', 'json'],
  ['GET /.well-known/jwks.json', 'json'],
  ['HEAD /.well-known/jwks.json', 'json'],
  ['GET /.well-known/oauth-authorization-server', 'json'],
  ['HEAD /.well-known/oauth-authorization-server', 'json'],
  // CORS preflights (src/http/cors.ts): 204 without a body.
  ['OPTIONS /oauth/userinfo', 'other'],
  ['OPTIONS /.well-known/openid-configuration', 'other'],
  ['OPTIONS /.well-known/jwks.json', 'other'],
  ['OPTIONS /.well-known/oauth-authorization-server', 'other'],
  // Registered single-page apps' origins only: 204, or 403 for any other origin.
  ['OPTIONS /oauth/token', 'other'],
  ['OPTIONS /oauth/revoke', 'other'],
  ['GET /healthz', 'json'],
  ['HEAD /healthz', 'json'],
  ['GET /readyz', 'json'],
  ['HEAD /readyz', 'json'],
  ['GET /metrics', 'other'],
  ['HEAD /metrics', 'other'],
  ['GET /static/app.css', 'other'],
  ['HEAD /static/app.css', 'other'],
  ['GET /static/favicon.svg', 'other'],
  ['HEAD /static/favicon.svg', 'other'],
  ['GET /static/webauthn-browser.js', 'other'],
  ['HEAD /static/webauthn-browser.js', 'other'],
  ['GET /static/passkeys.js', 'other'],
  ['HEAD /static/passkeys.js', 'other'],
  ['GET /static/copy.js', 'other'],
  ['HEAD /static/copy.js', 'other'],
  // Registered only when BRAND_LOGO_FILE is set (src/http/routes/static.ts); the fuzz harness sets it.
  ['GET /static/brand-logo', 'other'],
  ['HEAD /static/brand-logo', 'other'],
  // The passkey script's endpoints (src/http/routes/account/passkeys.ts): in the page context, answering JSON.
  ['POST /account/passkeys/registration-options', 'page-json'],
  ['POST /account/passkeys/registration', 'page-json'],
  ['POST /login/passkey/options', 'page-json'],
  ['POST /login/passkey', 'page-json'],
  ['POST /login/second-factor/passkey/options', 'page-json'],
  ['POST /login/second-factor/passkey', 'page-json'],
])

/** Whether a route ("METHOD pattern") is outside the page context (API_ROUTES). */
export const outsidePages = (route: string): boolean => {
  const answer = API_ROUTES.get(route)
  return answer !== undefined && answer !== 'page-json'
}
