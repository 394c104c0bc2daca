import type { FastifyReply } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../helpers/app.js'

/*
 * Every Fastify plugin context has Request and Reply classes of its own, and past four of them
 * the property lookups of Fastify's per-request functions go megamorphic in V8
 * (src/http/routes/plugin-contexts.ts, docs/scaling.md "Plugin contexts"). The addresses a busy
 * deployment serves all day are in four contexts: the root, the OAuth API, the resource API and
 * the pages, the console's, the account's and the operator's pages among them (their hooks and
 * error handlers are route scopes, not contexts).
 */
describe('plugin contexts of the busy addresses', () => {
  let t: TestContext
  const classOf = new Map<string, object>()
  beforeAll(async () => {
    t = await buildTestApp({}, undefined, {
      beforeReady: (app) =>
        app.addHook('onSend', (request, reply: FastifyReply, payload, done) => {
          classOf.set(`${request.method} ${request.url}`, Object.getPrototypeOf(reply) as object)
          done(null, payload)
        }),
    })
  })
  afterAll(async () => {
    await t.close()
  })

  const groups = {
    root: [
      'GET /healthz',
      'GET /readyz',
      'GET /.well-known/oauth-authorization-server',
      'GET /.well-known/openid-configuration',
      'GET /.well-known/jwks.json',
    ],
    oauthApi: ['POST /oauth/token', 'POST /oauth/revoke', 'POST /oauth/par'],
    resourceApi: ['POST /oauth/introspect', 'GET /oauth/token/info', 'GET /oauth/userinfo'],
    pages: [
      'GET /oauth/authorize',
      'GET /login',
      'GET /signup',
      'GET /',
      'GET /applications',
      'GET /applications/new',
      'GET /account',
      'GET /account/two-factor',
      'GET /account/passkeys',
      'POST /account/passkeys/registration-options',
      'POST /login/passkey/options',
      'POST /login/second-factor/passkey/options',
      'GET /admin',
    ],
  }

  // Fastify gives a route the class of the nearest context that decorated the reply (its
  // lib/route.js, "avoid encapsulation if no decoration has been done"). No context outside the
  // pages decorates it, so every address there is answered from one class, and the pages (views,
  // cookies, CSRF) from their own: two in all.
  it('answers them from two Reply classes: one outside the pages, one for the pages', async () => {
    for (const key of Object.values(groups).flat()) {
      const [method, url] = key.split(' ') as [string, string]
      const res = await t.app.inject({ method: method as 'GET' | 'POST', url, headers: method === 'POST' ? { 'content-length': '0' } : {} })
      expect(res.statusCode, key).toBeLessThan(500)
      expect(classOf.has(key), key).toBe(true)
    }
    const perGroup = Object.entries(groups).map(([group, keys]) => {
      const classes = new Set(keys.map((key) => classOf.get(key)))
      expect(classes.size, group).toBe(1)
      return [...classes][0]
    })
    const [root, oauthApi, resourceApi, pages] = perGroup
    // Compared as booleans: printing a Reply prototype on failure would call its getters.
    expect(oauthApi === root, 'OAuth API').toBe(true)
    expect(resourceApi === root, 'resource API').toBe(true)
    expect(pages === root, 'pages').toBe(false)
  })
})
