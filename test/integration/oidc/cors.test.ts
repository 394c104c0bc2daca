import type { LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { createTokenSetup } from '../../helpers/factories.js'
import { createClient } from '../oauth/helpers.js'

/*
 * CORS for what a single-page app calls from the browser (src/http/cors.ts): the discovery
 * documents and the JWKS (public, read-only) and UserInfo (bearer-authenticated) answer a
 * registered single-page app's origin by name, never `*` and never with credentials; any other
 * origin gets no CORS header and its preflight is refused. The token and revocation endpoints
 * are not opened to other origins either (test/integration/oauth/public-clients.test.ts has
 * their registered-origin side).
 */

let t: TestContext
beforeAll(async () => {
  t = await buildTestApp()
  await createClient(t.db, { kind: 'spa', redirectUris: [`${ORIGIN}/callback`] })
})
afterAll(async () => {
  await t.close()
})

const ORIGIN = 'https://spa.example'
/** A page of an origin no single-page app registered. */
const OTHER = 'https://elsewhere.example'

function preflight(url: string, method: string, headers?: string, origin = ORIGIN): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'OPTIONS',
    url,
    headers: {
      origin,
      'access-control-request-method': method,
      ...(headers === undefined ? {} : { 'access-control-request-headers': headers }),
    },
  })
}

const DOCUMENTS = ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server', '/.well-known/jwks.json']

describe('the discovery documents and the JWKS', () => {
  it.each(DOCUMENTS)("%s answers the preflight and GET for a registered single-page app's origin, without credentials", async (path) => {
    const pre = await preflight(path, 'GET')
    expect(pre.statusCode).toBe(204)
    expect(pre.body).toBe('')
    expect(pre.headers['access-control-allow-origin']).toBe(ORIGIN)
    expect(pre.headers.vary).toBe('Origin')
    expect(String(pre.headers['access-control-allow-methods']).split(', ')).toContain('GET')
    expect(pre.headers['access-control-max-age']).toBe('3600')
    expect(pre.headers['access-control-allow-credentials']).toBeUndefined()

    for (const method of ['GET', 'HEAD'] as const) {
      const res = await t.app.inject({ method, url: path, headers: { origin: ORIGIN } })
      expect(res.statusCode).toBe(200)
      expect(res.headers['access-control-allow-origin']).toBe(ORIGIN)
      expect(res.headers['access-control-allow-credentials']).toBeUndefined()
    }
  })

  it.each(DOCUMENTS)('%s gives any other origin no CORS header, and refuses its preflight', async (path) => {
    const pre = await preflight(path, 'GET', undefined, OTHER)
    expect(pre.statusCode).toBe(403)
    expect(pre.headers['access-control-allow-origin']).toBeUndefined()
    const res = await t.app.inject({ method: 'GET', url: path, headers: { origin: OTHER } })
    expect(res.statusCode).toBe(200)
    expect(res.headers['access-control-allow-origin']).toBeUndefined()
    expect(res.headers.vary).toBe('Origin')
  })
})

describe('UserInfo', () => {
  it('answers the preflight for GET and POST with the Authorization header, and DPoP (RFC 9449 §7.1)', async () => {
    for (const method of ['GET', 'POST']) {
      const pre = await preflight('/oauth/userinfo', method, 'authorization,content-type,dpop')
      expect(pre.statusCode).toBe(204)
      expect(pre.headers['access-control-allow-origin']).toBe(ORIGIN)
      expect(String(pre.headers['access-control-allow-methods']).split(', ')).toEqual(expect.arrayContaining(['GET', 'POST']))
      expect(String(pre.headers['access-control-allow-headers']).toLowerCase().split(', ')).toEqual(
        expect.arrayContaining(['authorization', 'content-type', 'dpop']),
      )
      expect(pre.headers['access-control-allow-credentials']).toBeUndefined()
    }
  })

  it("lets a registered single-page app's origin read the claims, and the refusals with their challenge; no other origin", async () => {
    const { token } = await createTokenSetup(t.db, ['openid'])
    const ok = await t.app.inject({
      method: 'GET',
      url: '/oauth/userinfo',
      headers: { origin: ORIGIN, authorization: `Bearer ${token.token}` },
    })
    expect(ok.statusCode).toBe(200)
    expect(ok.headers['access-control-allow-origin']).toBe(ORIGIN)
    const elsewhere = await t.app.inject({
      method: 'GET',
      url: '/oauth/userinfo',
      headers: { origin: OTHER, authorization: `Bearer ${token.token}` },
    })
    expect(elsewhere.statusCode).toBe(200)
    expect(elsewhere.headers['access-control-allow-origin']).toBeUndefined()
    expect((await preflight('/oauth/userinfo', 'GET', 'authorization', OTHER)).statusCode).toBe(403)

    const refused = await t.app.inject({
      method: 'POST',
      url: '/oauth/userinfo',
      headers: { origin: ORIGIN, authorization: 'Bearer gat_nothing' },
    })
    expect(refused.statusCode).toBe(401)
    expect(refused.headers['access-control-allow-origin']).toBe(ORIGIN)
    expect(refused.headers['access-control-expose-headers']).toBe('WWW-Authenticate')
    // A body the route never reads (Fastify refuses it before the handler) is answered for the origin too.
    const unreadable = await t.app.inject({
      method: 'POST',
      url: '/oauth/userinfo',
      headers: { origin: ORIGIN, 'content-type': 'application/json' },
      payload: '{',
    })
    expect(unreadable.statusCode).toBeGreaterThanOrEqual(400)
    expect(unreadable.statusCode).toBeLessThan(500)
    expect(unreadable.headers['access-control-allow-origin']).toBe(ORIGIN)
  })
})

describe('the token and revocation endpoints', () => {
  it.each(['/oauth/token', '/oauth/revoke'])('%s is not opened to any other origin', async (path) => {
    const pre = await preflight(path, 'POST', 'authorization', OTHER)
    expect(pre.headers['access-control-allow-origin']).toBeUndefined()
    expect(pre.headers['access-control-allow-methods']).toBeUndefined()
    const res = await t.app.inject({ method: 'POST', url: path, headers: { origin: OTHER, 'content-length': '0' } })
    expect(res.statusCode).toBeGreaterThanOrEqual(400)
    expect(res.headers['access-control-allow-origin']).toBeUndefined()
  })
})
