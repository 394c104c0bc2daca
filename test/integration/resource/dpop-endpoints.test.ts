import { beforeAll, describe, expect, it } from 'vitest'
import { DPOP_SIGNING_ALGS } from '@gatehouse/verifier/shared'
import { sha256Hex } from '../../../src/lib/crypto.js'
import { revoke } from '../../../src/revocation/revoke.js'
import { type TestContext, TEST_ISSUER, buildTestApp } from '../../helpers/app.js'
import { basicAuth, createAccessToken } from '../../helpers/factories.js'
import { type DpopKey, dpopKey } from '../../helpers/dpop.js'
import { resourceServerTestFile } from '../../helpers/file-set-up.js'

/*
 * Gatehouse's own resource endpoints and a token bound to a key (RFC 9449 §7): UserInfo and
 * token info accept it as `Authorization: DPoP` with a proof for the endpoint's URL under the
 * issuer, once across every process; introspection and token info say it is bound (§6.2).
 */

const { t, user, app, rs } = resourceServerTestFile({ resourceServerName: 'Introspecting API' })
const ALGS = `algs="${DPOP_SIGNING_ALGS.join(' ')}"`
const USERINFO = `${TEST_ISSUER}/oauth/userinfo`
const TOKEN_INFO = `${TEST_ISSUER}/oauth/token/info`

let key: DpopKey
let otherKey: DpopKey
beforeAll(async () => {
  key = await dpopKey()
  otherKey = await dpopKey()
})

const seconds = () => Math.floor(t.clock().getTime() / 1000)

function boundToken(fields: { expiresAt?: Date; scopes?: string[] } = {}) {
  return createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes: ['openid', 'email'], dpopJkt: key.jkt, ...fields })
}

function proof(accessToken: string, url: string, method = 'GET', options: { omit?: 'ath'; by?: DpopKey } = {}) {
  return (options.by ?? key).proof({ method, url, now: seconds(), accessToken, omit: options.omit })
}

interface Endpoint {
  name: string
  url: string
  method: 'GET' | 'POST'
  ok: (body: Record<string, unknown>) => void
}

const ENDPOINTS: Endpoint[] = [
  {
    name: 'GET /oauth/userinfo',
    url: USERINFO,
    method: 'GET',
    ok: (body) => expect(body).toEqual({ sub: user.id, email: user.email, email_verified: expect.any(Boolean) }),
  },
  { name: 'POST /oauth/userinfo', url: USERINFO, method: 'POST', ok: (body) => expect(body.sub).toBe(user.id) },
  {
    name: 'GET /oauth/token/info',
    url: TOKEN_INFO,
    method: 'GET',
    ok: (body) => expect(body).toMatchObject({ token_type: 'DPoP', cnf: { jkt: key.jkt } }),
  },
]

function send(endpoint: Endpoint, headers: Record<string, string | string[]>, target = t) {
  return target.app.inject({ method: endpoint.method, url: new URL(endpoint.url).pathname, headers })
}

function expectDpopFailure(res: Awaited<ReturnType<typeof send>>, error: string, description: RegExp) {
  expect(res.statusCode).toBe(401)
  expect(res.headers['www-authenticate']).toMatch(new RegExp(`^DPoP error="${error}", error_description="[^"]+", ${ALGS}$`))
  expect(res.json()).toMatchObject({ error })
  expect(res.json().error_description).toMatch(description)
}

describe.each(ENDPOINTS)('$name with a token bound to a key', (endpoint) => {
  const { url, method } = endpoint

  it('answers DPoP with a proof for this endpoint under the issuer', async () => {
    const tok = await boundToken()
    const res = await send(endpoint, { authorization: `DPoP ${tok.token}`, dpop: await proof(tok.token, url, method) })
    expect(res.statusCode).toBe(200)
    endpoint.ok(res.json())
  })

  it('refuses the token as Bearer, with a challenge that offers DPoP', async () => {
    const tok = await boundToken()
    const res = await send(endpoint, { authorization: `Bearer ${tok.token}` })
    expect(res.statusCode).toBe(401)
    expect(res.headers['www-authenticate']).toMatch(
      new RegExp(`^Bearer realm="gatehouse", error="invalid_token", error_description="[^"]*bound to a key[^"]*", DPoP ${ALGS}$`),
    )
  })

  it('refuses a replayed proof, also at another Gatehouse process on the same database', async () => {
    const tok = await boundToken()
    const headers = { authorization: `DPoP ${tok.token}`, dpop: await proof(tok.token, url, method) }
    expect((await send(endpoint, headers)).statusCode).toBe(200)
    expectDpopFailure(await send(endpoint, headers), 'invalid_dpop_proof', /used before/)
    const fresh = { authorization: `DPoP ${tok.token}`, dpop: await proof(tok.token, url, method) }
    const other: TestContext = await buildTestApp({}, t.testDb)
    try {
      other.clock.set(t.clock())
      expect((await send(endpoint, fresh, other)).statusCode).toBe(200)
      expectDpopFailure(await send(endpoint, fresh), 'invalid_dpop_proof', /used before/)
    } finally {
      await other.close()
    }
  })

  it('refuses a proof for another URL, whatever the Host header says, or another method', async () => {
    const tok = await boundToken()
    const authorization = `DPoP ${tok.token}`
    const elsewhere = `https://elsewhere.test${new URL(url).pathname}`
    const res = await send(endpoint, { authorization, host: 'elsewhere.test', dpop: await proof(tok.token, elsewhere, method) })
    expectDpopFailure(res, 'invalid_dpop_proof', /htu/)
    const otherPath = url === USERINFO ? TOKEN_INFO : USERINFO
    expectDpopFailure(await send(endpoint, { authorization, dpop: await proof(tok.token, otherPath, method) }), 'invalid_dpop_proof', /htu/)
    const otherMethod = method === 'GET' ? 'POST' : 'GET'
    expectDpopFailure(await send(endpoint, { authorization, dpop: await proof(tok.token, url, otherMethod) }), 'invalid_dpop_proof', /htm/)
  })

  it('refuses a proof by another key, without ath, or none', async () => {
    const tok = await boundToken()
    const authorization = `DPoP ${tok.token}`
    expectDpopFailure(
      await send(endpoint, { authorization, dpop: await proof(tok.token, url, method, { by: otherKey }) }),
      'invalid_token',
      /another key/,
    )
    expectDpopFailure(
      await send(endpoint, { authorization, dpop: await proof(tok.token, url, method, { omit: 'ath' }) }),
      'invalid_dpop_proof',
      /ath/,
    )
    expectDpopFailure(await send(endpoint, { authorization }), 'invalid_dpop_proof', /required/)
  })

  it('refuses a bearer token with the DPoP scheme, and an expired bound token by the clock', async () => {
    const bearer = await createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes: ['openid'] })
    expectDpopFailure(
      await send(endpoint, { authorization: `DPoP ${bearer.token}`, dpop: await proof(bearer.token, url, method) }),
      'invalid_token',
      /not bound/,
    )
    const tok = await boundToken({ expiresAt: new Date(t.clock().getTime() + 10_000) })
    expect((await send(endpoint, { authorization: `DPoP ${tok.token}`, dpop: await proof(tok.token, url, method) })).statusCode).toBe(200)
    t.clock.advance(11_000)
    expectDpopFailure(
      await send(endpoint, { authorization: `DPoP ${tok.token}`, dpop: await proof(tok.token, url, method) }),
      'invalid_token',
      /invalid/,
    )
  })

  it('stops answering for a bound token once it is revoked', async () => {
    const tok = await boundToken()
    expect((await send(endpoint, { authorization: `DPoP ${tok.token}`, dpop: await proof(tok.token, url, method) })).statusCode).toBe(200)
    const revocation = {
      kind: 'token-of-client',
      clientId: app.clientId,
      secretHash: sha256Hex(app.clientSecret),
      tokenHash: tok.digest,
    } as const
    expect(await revoke(t.revocation, revocation, t.clock())).toBe(1)
    expectDpopFailure(
      await send(endpoint, { authorization: `DPoP ${tok.token}`, dpop: await proof(tok.token, url, method) }),
      'invalid_token',
      /invalid/,
    )
  })
})

describe('UserInfo and a bound token', () => {
  it('refuses it in a POST form body, as a bearer token', async () => {
    const tok = await boundToken()
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/userinfo',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `access_token=${tok.token}`,
    })
    expect(res.statusCode).toBe(401)
    expect(res.headers['www-authenticate']).toMatch(/error="invalid_token".*bound to a key.*, DPoP algs=/)
  })

  it('answers 403 insufficient_scope in the DPoP challenge for a token without openid', async () => {
    const tok = await boundToken({ scopes: ['read'] })
    const res = await send(ENDPOINTS[0]!, { authorization: `DPoP ${tok.token}`, dpop: await proof(tok.token, USERINFO) })
    expect(res.statusCode).toBe(403)
    expect(res.headers['www-authenticate']).toMatch(
      new RegExp(`^DPoP error="insufficient_scope", error_description="[^"]+", scope="openid", ${ALGS}$`),
    )
  })
})

describe('what introspection and token info say of a token (RFC 7662 2.2, RFC 9449 §6.2)', () => {
  async function introspect(token: string) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/introspect',
      headers: { authorization: basicAuth(rs.clientId, rs.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
      payload: `token=${token}`,
    })
    expect(res.statusCode).toBe(200)
    return res.json()
  }

  it('gives a bound, expiring token token_type DPoP, cnf.jkt and exp; a bearer token neither', async () => {
    const expiresAt = new Date(Math.floor(t.clock().getTime() / 1000) * 1000 + 3_600_000)
    const tok = await boundToken({ expiresAt })
    expect(await introspect(tok.token)).toMatchObject({
      active: true,
      token_type: 'DPoP',
      cnf: { jkt: key.jkt },
      exp: expiresAt.getTime() / 1000,
    })
    const bearer = await createAccessToken(t.db, { userId: user.id, applicationId: app.id })
    const plain = await introspect(bearer.token)
    expect(plain).toMatchObject({ active: true, token_type: 'Bearer' })
    expect(plain).not.toHaveProperty('cnf')
    expect(plain).not.toHaveProperty('exp')
  })

  it("counts token info's expires_in down with the clock, null for a token valid until revoked", async () => {
    const expiresAt = new Date(Math.floor(t.clock().getTime() / 1000) * 1000 + 600_000)
    const tok = await createAccessToken(t.db, { userId: user.id, applicationId: app.id, expiresAt })
    const info = async () =>
      (await t.app.inject({ method: 'GET', url: '/oauth/token/info', headers: { authorization: `Bearer ${tok.token}` } })).json()
    expect(await info()).toMatchObject({ expires_in: 600, token_type: 'Bearer' })
    t.clock.advance(100_000)
    expect((await info()).expires_in).toBe(500)
  })
})
