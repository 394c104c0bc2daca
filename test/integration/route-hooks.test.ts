import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, type TestContext } from '../helpers/app.js'
import type { PolicyArea } from '../../src/accounts/second-factor/policy.js'
import { policyAreaOfRoute } from '../../src/http/second-factor-gate.js'
import { type RouteHooks, outsidePages, routeTree } from '../helpers/route-tree.js'

/*
 * The hooks each route runs, as Fastify assembled them. A hook added to a context runs on every
 * request of it: one a route module or a plugin adds to the root or an API context by mistake
 * costs every token, introspection and revocation request (docs/decisions/016-hot-path-rules.md),
 * and one of the pages' would give the APIs cookies and sessions. Every hook Gatehouse adds has a name, so the lists below say which.
 */

const ROOT = ['requestIdentity', 'startTiming']
/** The pages' onRequest hooks: the root's, @fastify/view's (`reply.locals`, unnamed), the headers, the cookie plugin's, the origin check, the session. */
const PAGES = [...ROOT, 'anonymous', 'pageHeaders', 'fastifyCookieHandler', 'refuseCrossOrigin', 'readSession']
/**
 * What an API route may run besides these: the OAuth API's Content-Length check, CORS for the
 * endpoints a registered single-page app may call (src/http/cors.ts), Fastify's HEAD handling, the streamed count.
 */
const API_HOOKS = new Set([
  ...ROOT,
  'requireContentLength',
  'allowRegisteredOrigin',
  'countAnswer',
  'headRouteOnSendHandler',
  'countStreamed',
])

let t: TestContext
let routes: Map<string, RouteHooks>
beforeAll(async () => {
  t = await buildTestApp()
  routes = routeTree(t.app)
})
afterAll(async () => {
  await t?.close()
})

describe('the hot paths run these hooks and no others', () => {
  it.each([
    ['GET /oauth/token/info', { onRequest: ROOT, onSend: ['countAnswer'] }],
    ['POST /oauth/introspect', { onRequest: ROOT, onSend: ['countAnswer'] }],
    ['GET /oauth/userinfo', { onRequest: [...ROOT, 'allowRegisteredOrigin'], onSend: ['countAnswer'] }],
    ['OPTIONS /oauth/userinfo', { onRequest: ROOT, onSend: ['countAnswer'] }],
    ['POST /oauth/token', { onRequest: [...ROOT, 'requireContentLength', 'allowRegisteredOrigin'], onSend: ['countAnswer'] }],
    ['POST /oauth/revoke', { onRequest: [...ROOT, 'requireContentLength', 'allowRegisteredOrigin'], onSend: ['countAnswer'] }],
    ['GET /oauth/authorize', { onRequest: PAGES, onSend: ['fastifyCookieOnSendHandler', 'countUnmatched', 'countAnswer'] }],
  ])('%s', (route, hooks) => {
    expect(routes.get(route)).toEqual(hooks)
  })
})

it('no route outside the pages runs a hook of theirs, and every page runs all of them', () => {
  // Which routes are outside the pages is the hand-kept list, not the hooks under test.
  const apis = [...routes].filter(([route]) => outsidePages(route))
  const pages = [...routes].filter(([route]) => !outsidePages(route))
  // Both kinds are there: the API's token endpoint and the console's application page.
  expect(apis.map(([route]) => route)).toContain('POST /oauth/token')
  expect(pages.map(([route]) => route)).toContain('GET /applications/:id')
  for (const [route, hooks] of apis) {
    const foreign = Object.values(hooks)
      .flat()
      .filter((name) => !API_HOOKS.has(name))
    expect({ route, foreign }).toEqual({ route, foreign: [] })
  }
  for (const [route, hooks] of pages) expect({ route, onRequest: hooks.onRequest }).toEqual({ route, onRequest: PAGES })
})

describe('each group of pages is a plugin whose hooks and error handler reach its own routes and no others', () => {
  const PASSKEY_API = [
    'POST /account/passkeys/registration-options',
    'POST /account/passkeys/registration',
    'POST /login/passkey/options',
    'POST /login/passkey',
    'POST /login/second-factor/passkey/options',
    'POST /login/second-factor/passkey',
  ]
  const firstOf = (route: string) => routes.get(route)?.preHandler?.[0]
  const pattern = (route: string) => route.slice(route.indexOf(' ') + 1)

  it("the operator's check runs first on every /admin route and nowhere else", () => {
    const admin = [...routes.keys()].filter((route) => pattern(route) === '/admin' || pattern(route).startsWith('/admin/'))
    expect(admin.length).toBeGreaterThan(10)
    for (const [route, hooks] of routes) {
      const inGroup = admin.includes(route)
      expect({ route, first: inGroup ? firstOf(route) : undefined }).toEqual({ route, first: inGroup ? 'operatorOnly' : undefined })
      if (!inGroup) expect({ route, operator: hooks.preHandler?.includes('operatorOnly') ?? false }).toEqual({ route, operator: false })
    }
  })

  it('the passkey check runs first on the passkey endpoints and nowhere else; a logged-in user is asked for first on the console and account pages', () => {
    for (const [route, hooks] of routes) {
      const api = PASSKEY_API.includes(route)
      expect({ route, passkeys: hooks.preHandler?.includes('passkeysOnly') ?? false }).toEqual({ route, passkeys: api })
      if (api) expect({ route, first: firstOf(route) }).toEqual({ route, first: 'passkeysOnly' })
      else if (/^\/(applications|account)(\/|$)/.test(pattern(route)))
        expect({ route, first: firstOf(route) }).toEqual({ route, first: 'requireUser' })
    }
  })

  it('the passkey endpoints answer a refusal before their handler as JSON; the pages beside them with their HTML error page', async () => {
    const badJson = { method: 'POST' as const, headers: { 'content-type': 'application/json' }, payload: '{' }
    const api = await t.app.inject({ ...badJson, url: '/login/passkey/options' })
    expect(api.statusCode).toBe(400)
    expect(api.json()).toEqual({ error: 'The request was not understood. Reload the page and try again.' })
    const page = await t.app.inject({ ...badJson, url: '/login' })
    expect(page.statusCode).toBe(400)
    expect(page.headers['content-type']).toMatch(/^text\/html/)
  })
})

describe('REQUIRE_TWO_FACTOR: every page runs the gate first, and the area comes from the route (src/http/second-factor-gate.ts)', () => {
  /** The pages never gated (docs/accounts.md "Who must enrol"), by pattern prefix: kept by hand, apart from the gate's own list. */
  const OPEN = ['/logout', '/oauth/logout', '/account/delete', '/login', '/signup', '/forgot-password', '/reset-password']
  OPEN.push('/verify-email', '/confirm-email', '/cancel-email-change', '/account/two-factor', '/account/passkeys', '/reauth')
  const under = (pattern: string, prefix: string) => pattern === prefix || pattern.startsWith(`${prefix}/`)
  const areaOf = (pattern: string): PolicyArea => {
    if (OPEN.some((prefix) => under(pattern, prefix))) return 'exempt'
    if (under(pattern, '/admin')) return 'admin'
    if (under(pattern, '/applications')) return 'applications'
    // The device flow's page is consent too (src/http/routes/oauth/device.ts).
    if (pattern === '/oauth/authorize' || under(pattern, '/device')) return 'authorize'
    return 'console'
  }

  let strict: TestContext
  let strictRoutes: Map<string, RouteHooks>
  /** What each route was added with, as a request to it sees it: "METHOD pattern" → its config. */
  const configs = new Map<string, { secondFactorArea?: PolicyArea }>()
  beforeAll(async () => {
    strict = await buildTestApp({ REQUIRE_TWO_FACTOR: 'operators' }, t.testDb, {
      beforeReady: (app) =>
        app.addHook('onRequest', (request, _reply, done) => {
          configs.set(`${request.method} ${request.routeOptions.url}`, request.routeOptions.config)
          done()
        }),
    })
    strictRoutes = routeTree(strict.app)
  })
  afterAll(async () => {
    await strict?.close()
  })

  it('every page route runs the gate before any other preHandler; no API route runs it', () => {
    const pages = [...strictRoutes].filter(([route]) => !outsidePages(route))
    expect(pages.length).toBeGreaterThan(50)
    for (const [route, hooks] of pages) expect({ route, first: hooks.preHandler?.[0] }).toEqual({ route, first: 'secondFactorGate' })
    for (const [route, hooks] of strictRoutes)
      if (outsidePages(route)) expect({ route, preHandler: hooks.preHandler }).toEqual({ route, preHandler: undefined })
  })

  it('the area comes from the route, so no spelling of its URL changes it', async () => {
    const pages = [...strictRoutes.keys()].filter((route) => !outsidePages(route) && !route.startsWith('HEAD '))
    for (const route of pages) {
      const [method, pattern] = route.split(' ') as [string, string]
      await strict.app.inject({ method: method as 'GET', url: pattern.replace(/:\w+/g, 'x') })
    }
    for (const route of pages) {
      const pattern = route.slice(route.indexOf(' ') + 1)
      expect(configs.has(route), route).toBe(true)
      expect({ route, area: policyAreaOfRoute({ url: pattern, config: configs.get(route) }) }).toEqual({ route, area: areaOf(pattern) })
    }
    // The router matches the percent-decoded path (RFC 3986 2.3): /%61dmin is /admin's route, area and all.
    configs.clear()
    await strict.app.inject('/%61dmin')
    expect(configs.get('GET /admin')?.secondFactorArea).toBe('admin')
  })
})
