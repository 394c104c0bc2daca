import type { LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { createTokenSetup } from '../../helpers/factories.js'

/*
 * CORS for what a browser application may call from any origin (src/http/cors.ts): the discovery
 * documents and the JWKS (public, read-only) and UserInfo (bearer-authenticated): the preflight
 * and every answer say `Access-Control-Allow-Origin: *`, never with credentials. The token and
 * revocation endpoints are not opened.
 */

let t: TestContext
beforeAll(async () => {
  t = await buildTestApp()
})
afterAll(async () => {
  await t.close()
})

const ORIGIN = 'https://spa.example'

function preflight(url: string, method: string, headers?: string): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'OPTIONS',
    url,
    headers: {
      origin: ORIGIN,
      'access-control-request-method': method,
      ...(headers === undefined ? {} : { 'access-control-request-headers': headers }),
    },
  })
}

const DOCUMENTS = ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server', '/.well-known/jwks.json']

describe('the discovery documents and the JWKS', () => {
  it.each(DOCUMENTS)('%s answers the preflight and GET for any origin, without credentials', async (path) => {
    const pre = await preflight(path, 'GET')
    expect(pre.statusCode).toBe(204)
    expect(pre.body).toBe('')
    expect(pre.headers['access-control-allow-origin']).toBe('*')
    expect(String(pre.headers['access-control-allow-methods']).split(', ')).toContain('GET')
    expect(pre.headers['access-control-max-age']).toBe('3600')
    expect(pre.headers['access-control-allow-credentials']).toBeUndefined()

    for (const method of ['GET', 'HEAD'] as const) {
      const res = await t.app.inject({ method, url: path, headers: { origin: ORIGIN } })
      expect(res.statusCode).toBe(200)
      expect(res.headers['access-control-allow-origin']).toBe('*')
      expect(res.headers['access-control-allow-credentials']).toBeUndefined()
    }
  })
})

describe('UserInfo', () => {
  it('answers the preflight for GET and POST with the Authorization header', async () => {
    for (const method of ['GET', 'POST']) {
      const pre = await preflight('/oauth/userinfo', method, 'authorization,content-type')
      expect(pre.statusCode).toBe(204)
      expect(pre.headers['access-control-allow-origin']).toBe('*')
      expect(String(pre.headers['access-control-allow-methods']).split(', ')).toEqual(expect.arrayContaining(['GET', 'POST']))
      expect(String(pre.headers['access-control-allow-headers']).toLowerCase().split(', ')).toEqual(
        expect.arrayContaining(['authorization', 'content-type']),
      )
      expect(pre.headers['access-control-allow-credentials']).toBeUndefined()
    }
  })

  it('lets any origin read the claims, and the refusals with their challenge', async () => {
    const { token } = await createTokenSetup(t.db, ['openid'])
    const ok = await t.app.inject({
      method: 'GET',
      url: '/oauth/userinfo',
      headers: { origin: ORIGIN, authorization: `Bearer ${token.token}` },
    })
    expect(ok.statusCode).toBe(200)
    expect(ok.headers['access-control-allow-origin']).toBe('*')

    const refused = await t.app.inject({
      method: 'POST',
      url: '/oauth/userinfo',
      headers: { origin: ORIGIN, authorization: 'Bearer gat_nothing' },
    })
    expect(refused.statusCode).toBe(401)
    expect(refused.headers['access-control-allow-origin']).toBe('*')
    expect(refused.headers['access-control-expose-headers']).toBe('WWW-Authenticate')
    // A body the route never reads (Fastify refuses it before the handler) is answered for any origin too.
    const unreadable = await t.app.inject({
      method: 'POST',
      url: '/oauth/userinfo',
      headers: { origin: ORIGIN, 'content-type': 'application/json' },
      payload: '{',
    })
    expect(unreadable.statusCode).toBeGreaterThanOrEqual(400)
    expect(unreadable.statusCode).toBeLessThan(500)
    expect(unreadable.headers['access-control-allow-origin']).toBe('*')
  })
})

describe('the token and revocation endpoints', () => {
  it.each(['/oauth/token', '/oauth/revoke'])('%s is not opened to any origin', async (path) => {
    const pre = await preflight(path, 'POST', 'authorization')
    expect(pre.headers['access-control-allow-origin']).toBeUndefined()
    expect(pre.headers['access-control-allow-methods']).toBeUndefined()
    const res = await t.app.inject({ method: 'POST', url: path, headers: { origin: ORIGIN, 'content-length': '0' } })
    expect(res.statusCode).toBeGreaterThanOrEqual(400)
    expect(res.headers['access-control-allow-origin']).toBeUndefined()
  })
})
