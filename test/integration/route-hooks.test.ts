import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, type TestContext } from '../helpers/app.js'
import { type RouteHooks, outsidePages, routeTree } from '../helpers/route-tree.js'

/*
 * The hooks each route runs, as Fastify assembled them (docs/decisions/015-four-plugin-contexts.md).
 * A hook added to a context runs on every request of it: one a route module or a plugin adds to
 * the root or an API context by mistake costs every token, introspection and revocation request
 * (docs/scaling.md "Plugin contexts"), and one of the pages' would give the APIs cookies and
 * sessions. Every hook Gatehouse adds has a name, so the lists below say which.
 */

const ROOT = ['requestIdentity', 'startTiming']
/** The pages' onRequest hooks: the root's, @fastify/view's (`reply.locals`, unnamed), the headers, the cookie plugin's, the origin check, the session. */
const PAGES = [...ROOT, 'anonymous', 'pageHeaders', 'fastifyCookieHandler', 'refuseCrossOrigin', 'readSession']
/**
 * What an API route may run besides these: the OAuth API's Content-Length check, CORS for the
 * endpoints any origin may call (src/http/cors.ts), Fastify's HEAD handling, the streamed count.
 */
const API_HOOKS = new Set([...ROOT, 'requireContentLength', 'allowAnyOrigin', 'countAnswer', 'headRouteOnSendHandler', 'countStreamed'])

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
    ['GET /oauth/userinfo', { onRequest: [...ROOT, 'allowAnyOrigin'], onSend: ['countAnswer'] }],
    ['OPTIONS /oauth/userinfo', { onRequest: ROOT, onSend: ['countAnswer'] }],
    ['POST /oauth/token', { onRequest: [...ROOT, 'requireContentLength'], onSend: ['countAnswer'] }],
    ['POST /oauth/revoke', { onRequest: [...ROOT, 'requireContentLength'], onSend: ['countAnswer'] }],
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

describe('REQUIRE_TWO_FACTOR: each page route runs the gate of its own area first (src/http/second-factor-gate.ts)', () => {
  /** The pages never gated (README "Who must enrol"), by pattern prefix: kept by hand, apart from the gate's own list. */
  const OPEN = ['/logout', '/oauth/logout', '/account/delete', '/login', '/signup', '/forgot-password', '/reset-password']
  OPEN.push('/verify-email', '/confirm-email', '/cancel-email-change', '/account/two-factor', '/account/passkeys', '/reauth')
  const under = (pattern: string, prefix: string) => pattern === prefix || pattern.startsWith(`${prefix}/`)
  const gateOf = (pattern: string): string | undefined => {
    if (OPEN.some((prefix) => under(pattern, prefix))) return undefined
    if (under(pattern, '/admin')) return 'secondFactorAdmin'
    if (under(pattern, '/applications')) return 'secondFactorApplications'
    if (pattern === '/oauth/authorize') return 'secondFactorAuthorize'
    return 'secondFactorConsole'
  }
  const GATES = new Set(['secondFactorAdmin', 'secondFactorApplications', 'secondFactorAuthorize', 'secondFactorConsole'])

  let strict: TestContext
  let strictRoutes: Map<string, RouteHooks>
  beforeAll(async () => {
    strict = await buildTestApp({ REQUIRE_TWO_FACTOR: 'operators' }, t.testDb)
    strictRoutes = routeTree(strict.app)
  })
  afterAll(async () => {
    await strict?.close()
  })

  it('the area comes from the route, so no spelling of its URL changes it', () => {
    const pages = [...strictRoutes].filter(([route]) => !outsidePages(route))
    expect(pages.length).toBeGreaterThan(50)
    for (const [route, hooks] of pages) {
      const pattern = route.slice(route.indexOf(' ') + 1)
      const gates = (hooks.preHandler ?? []).filter((name) => GATES.has(name))
      const expected = gateOf(pattern)
      expect({ route, gates }).toEqual({ route, gates: expected === undefined ? [] : [expected] })
      if (expected !== undefined) expect({ route, first: hooks.preHandler?.[0] }).toEqual({ route, first: expected })
    }
    for (const [route, hooks] of strictRoutes)
      if (outsidePages(route)) expect({ route, preHandler: hooks.preHandler }).toEqual({ route, preHandler: undefined })
  })

  it("GET /oauth/authorize runs one gate, the consent flow's", () => {
    expect(strictRoutes.get('GET /oauth/authorize')).toEqual({
      onRequest: PAGES,
      preHandler: ['secondFactorAuthorize'],
      onSend: ['fastifyCookieOnSendHandler', 'countUnmatched', 'countAnswer'],
    })
  })
})
