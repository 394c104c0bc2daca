import { type Server, type ServerResponse, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildResourceApi } from '../../../examples/resource-api.js'
import { revoke } from '../../../src/revocation/revoke.js'
import { sha256Hex } from '../../../src/lib/crypto.js'
import { DPOP_SIGNING_ALGS } from '@gatehouse/verifier/shared'
import { type RequestWithToken, type Verifier, authenticateRequest, createVerifier, requireToken } from '@gatehouse/verifier'
import { createAccessToken } from '../../helpers/factories.js'
import { type DpopKey, dpopKey } from '../../helpers/dpop.js'
import { listenOnFreePort } from '../../helpers/app.js'
import { resourceServerTestFile } from '../../helpers/file-set-up.js'

/*
 * RFC 9449 §7 at a resource server: the verifier in database and introspection mode, through
 * the Fastify plugin (the example resource API) and the node:http adapters, accepts a token
 * bound to a key only as `Authorization: DPoP` with a fresh proof of that key for the request,
 * and says so in its challenges. Clients address the API at ORIGIN (the `publicOrigin` option).
 */

const ORIGIN = 'https://api.example.test'
const ALGS = `algs="${DPOP_SIGNING_ALGS.join(' ')}"`

const { t, user, app, rs } = resourceServerTestFile({ resourceServerName: 'DPoP resource server' })

interface Answer {
  status: number
  www: string | undefined
  body: Record<string, unknown> | undefined
}
interface Call {
  method?: 'GET' | 'POST'
  path?: '/me' | '/teams'
  authorization?: string
  dpop?: string | string[]
}
type Caller = (call: Call) => Promise<Answer>

const closers: (() => Promise<unknown>)[] = []
const callers: Record<string, Caller> = {}
let key: DpopKey
let otherKey: DpopKey

beforeAll(async () => {
  key = await dpopKey()
  otherKey = await dpopKey('EdDSA')
  const base = await listenOnFreePort(t)
  const now = () => t.clock().getTime()
  const database = createVerifier({ mode: 'database', database: t.deps.bus.verifierDatabase(t.deps.database), now, publicOrigin: ORIGIN })
  const introspection = createVerifier({
    mode: 'introspection',
    introspectionUrl: `${base}/oauth/introspect`,
    revocationStreamUrl: `${base}/oauth/revocations/stream`,
    clientId: rs.clientId,
    clientSecret: rs.clientSecret,
    now,
    publicOrigin: `${ORIGIN}/`,
  })
  closers.push(
    () => database.close(),
    () => introspection.close(),
  )
  await Promise.all([database.ready(), introspection.ready()])
  for (const [mode, verifier] of [
    ['database', database],
    ['introspection', introspection],
  ] as const) {
    callers[`${mode}, Fastify`] = fastifyCaller(await buildResourceApi(verifier))
    callers[`${mode}, node`] = (await nodeCaller(verifier)).call
  }
})
afterAll(async () => {
  for (const close of closers.reverse()) await close()
})

function fastifyCaller(api: FastifyInstance): Caller {
  closers.push(() => api.close())
  return async ({ method = 'GET', path = '/me', authorization, dpop }) => {
    const headers: Record<string, string | string[]> = {}
    if (authorization !== undefined) headers.authorization = authorization
    if (dpop !== undefined) headers.dpop = dpop
    const res = await api.inject({ method, url: path, headers, ...(method === 'POST' ? { payload: {} } : {}) })
    return { status: res.statusCode, www: res.headers['www-authenticate'] as string | undefined, body: res.body ? res.json() : undefined }
  }
}

/** GET /me through requireToken (Express style), POST /teams through authenticateRequest. */
async function nodeCaller(verifier: Verifier): Promise<{ call: Caller; base: string }> {
  const me = requireToken(verifier, 'read')
  const send = (res: ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
  const server: Server = createServer((req: RequestWithToken, res) => {
    if (req.method === 'GET' && req.url === '/me') return me(req, res, () => send(res, 200, { user_id: req.accessToken!.userId }))
    void authenticateRequest(verifier, req, res, 'write_teams').then((token) => token && send(res, 201, { by: token.subject }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closers.push(() => new Promise((resolve) => server.close(resolve)))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const call: Caller = async ({ method = 'GET', path = '/me', authorization, dpop }) => {
    const headers: [string, string][] = []
    if (authorization !== undefined) headers.push(['authorization', authorization])
    for (const proof of typeof dpop === 'string' ? [dpop] : (dpop ?? [])) headers.push(['dpop', proof])
    const res = await fetch(`${base}${path}`, { method, headers })
    const text = await res.text()
    return { status: res.status, www: res.headers.get('www-authenticate') ?? undefined, body: text ? JSON.parse(text) : undefined }
  }
  return { call, base }
}

const seconds = () => Math.floor(t.clock().getTime() / 1000)

function boundToken(scopes = ['read'], fields: { expiresAt?: Date } = {}) {
  return createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes, dpopJkt: key.jkt, ...fields })
}

function proofFor(accessToken: string, overrides: { method?: string; path?: string; url?: string; omit?: 'ath'; by?: DpopKey } = {}) {
  const url = overrides.url ?? `${ORIGIN}${overrides.path ?? '/me'}`
  return (overrides.by ?? key).proof({ method: overrides.method ?? 'GET', url, now: seconds(), accessToken, omit: overrides.omit })
}

function dpopFailure(answer: Answer, error: 'invalid_token' | 'invalid_dpop_proof', description: RegExp) {
  expect(answer.status).toBe(401)
  expect(answer.www).toMatch(new RegExp(`^DPoP error="${error}", error_description="[^"]+", ${ALGS}$`))
  expect(answer.body).toMatchObject({ error })
  expect(answer.body?.error_description).toMatch(description)
}

describe.each(['database, Fastify', 'database, node', 'introspection, Fastify', 'introspection, node'])(
  'verifier with DPoP (%s)',
  (name) => {
    const call = (c: Call) => callers[name]!(c)

    it('accepts a bound token with a proof of its key for this request, and a bearer token as before', async () => {
      const tok = await boundToken(['read', 'write'])
      expect(await call({ authorization: `DPoP ${tok.token}`, dpop: await proofFor(tok.token) })).toMatchObject({ status: 200 })
      const proof = await proofFor(tok.token, { method: 'POST', path: '/teams' })
      expect(await call({ method: 'POST', path: '/teams', authorization: `dpop ${tok.token}`, dpop: proof })).toMatchObject({ status: 201 })
      const bearer = await createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes: ['read'] })
      expect(await call({ authorization: `Bearer ${bearer.token}` })).toMatchObject({ status: 200 })
    })

    it('refuses the bound token presented as Bearer, with or without a proof, and offers DPoP in the challenge', async () => {
      const tok = await boundToken()
      for (const dpop of [undefined, await proofFor(tok.token)]) {
        const res = await call({ authorization: `Bearer ${tok.token}`, dpop })
        expect(res.status).toBe(401)
        expect(res.www).toMatch(
          new RegExp(`^Bearer realm="gatehouse", error="invalid_token", error_description="[^"]*bound to a key[^"]*", DPoP ${ALGS}$`),
        )
      }
    })

    it('refuses a replayed proof', async () => {
      const tok = await boundToken()
      const proof = await proofFor(tok.token)
      expect((await call({ authorization: `DPoP ${tok.token}`, dpop: proof })).status).toBe(200)
      dpopFailure(await call({ authorization: `DPoP ${tok.token}`, dpop: proof }), 'invalid_dpop_proof', /used before/)
    })

    it('refuses a proof for another URL or method', async () => {
      const tok = await boundToken(['read', 'write'])
      const authorization = `DPoP ${tok.token}`
      dpopFailure(await call({ authorization, dpop: await proofFor(tok.token, { path: '/teams' }) }), 'invalid_dpop_proof', /htu/)
      dpopFailure(
        await call({ authorization, dpop: await proofFor(tok.token, { url: 'https://elsewhere.test/me' }) }),
        'invalid_dpop_proof',
        /htu/,
      )
      dpopFailure(await call({ authorization, dpop: await proofFor(tok.token, { method: 'POST' }) }), 'invalid_dpop_proof', /htm/)
    })

    it("refuses a proof signed by another key than the token's", async () => {
      const tok = await boundToken()
      dpopFailure(
        await call({ authorization: `DPoP ${tok.token}`, dpop: await proofFor(tok.token, { by: otherKey }) }),
        'invalid_token',
        /another key/,
      )
    })

    it('refuses a proof without ath, or for another token, and a request with no proof or two', async () => {
      const tok = await boundToken()
      const authorization = `DPoP ${tok.token}`
      dpopFailure(await call({ authorization, dpop: await proofFor(tok.token, { omit: 'ath' }) }), 'invalid_dpop_proof', /ath/)
      const other = await boundToken()
      dpopFailure(await call({ authorization, dpop: await proofFor(other.token) }), 'invalid_dpop_proof', /ath/)
      dpopFailure(await call({ authorization }), 'invalid_dpop_proof', /required/)
      dpopFailure(
        await call({ authorization, dpop: [await proofFor(tok.token), await proofFor(tok.token)] }),
        'invalid_dpop_proof',
        /one DPoP header/,
      )
      dpopFailure(await call({ authorization, dpop: 'not-a-jwt' }), 'invalid_dpop_proof', /not a JWT/)
    })

    it('refuses a bearer token presented with the DPoP scheme (RFC 9449 §7.1), and an unknown one', async () => {
      const bearer = await createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes: ['read'] })
      dpopFailure(await call({ authorization: `DPoP ${bearer.token}`, dpop: await proofFor(bearer.token) }), 'invalid_token', /not bound/)
      dpopFailure(await call({ authorization: 'DPoP gat_unknown', dpop: await proofFor('gat_unknown') }), 'invalid_token', /invalid/)
    })

    it('answers 403 insufficient_scope in the DPoP challenge', async () => {
      const tok = await boundToken(['read'])
      const res = await call({
        method: 'POST',
        path: '/teams',
        authorization: `DPoP ${tok.token}`,
        dpop: await proofFor(tok.token, { method: 'POST', path: '/teams' }),
      })
      expect(res.status).toBe(403)
      expect(res.www).toMatch(new RegExp(`^DPoP error="insufficient_scope", error_description="[^"]+", scope="write_teams", ${ALGS}$`))
    })

    it('challenges a request without credentials with Bearer and DPoP', async () => {
      const res = await call({})
      expect(res.status).toBe(401)
      expect(res.www).toBe(`Bearer realm="gatehouse", DPoP ${ALGS}`)
    })

    it('refuses an expiring token once the clock passes its expiry', async () => {
      const tok = await boundToken(['read'], { expiresAt: new Date(t.clock().getTime() + 30_000) })
      expect((await call({ authorization: `DPoP ${tok.token}`, dpop: await proofFor(tok.token) })).status).toBe(200)
      t.clock.advance(31_000)
      dpopFailure(await call({ authorization: `DPoP ${tok.token}`, dpop: await proofFor(tok.token) }), 'invalid_token', /invalid/)
    })

    it('drops a revoked bound token from its cache', async () => {
      const tok = await boundToken()
      expect((await call({ authorization: `DPoP ${tok.token}`, dpop: await proofFor(tok.token) })).status).toBe(200)
      const revocation = {
        kind: 'token-of-client',
        clientId: app.clientId,
        secretHash: sha256Hex(app.clientSecret),
        tokenHash: tok.digest,
      } as const
      expect(await revoke(t.revocation, revocation, t.clock())).toBe(1)
      await expect
        .poll(async () => (await call({ authorization: `DPoP ${tok.token}`, dpop: await proofFor(tok.token) })).status, { interval: 20 })
        .toBe(401)
    })
  },
)

describe('the origin of htu without publicOrigin', () => {
  it("is the request's Host, so a proof for the public origin is refused there: set publicOrigin behind a proxy", async () => {
    const verifier = createVerifier({
      mode: 'database',
      database: t.deps.bus.verifierDatabase(t.deps.database),
      now: () => t.clock().getTime(),
    })
    closers.push(() => verifier.close())
    await verifier.ready()
    const { call, base } = await nodeCaller(verifier)
    const tok = await boundToken()
    const authorization = `DPoP ${tok.token}`
    expect((await call({ authorization, dpop: await proofFor(tok.token, { url: `${base}/me` }) })).status).toBe(200)
    dpopFailure(await call({ authorization, dpop: await proofFor(tok.token) }), 'invalid_dpop_proof', /htu/)
  })
})

describe('verify(authorization), for Bearer-only callers', () => {
  it('refuses a bound token, with the Bearer challenge alone', async () => {
    const verifier = createVerifier({
      mode: 'database',
      database: t.deps.bus.verifierDatabase(t.deps.database),
      now: () => t.clock().getTime(),
    })
    closers.push(() => verifier.close())
    await verifier.ready()
    const tok = await boundToken()
    const first = await verifier.verify(`Bearer ${tok.token}`, 'read')
    expect(first).toMatchObject({ ok: false, status: 401, error: 'invalid_token' })
    expect(verifier.verifyCached(`Bearer ${tok.token}`, 'read')).toBe(first)
    expect(first.ok || first.wwwAuthenticate).toMatch(/^Bearer realm="gatehouse", error="invalid_token", error_description="[^"]+"$/)
  })
})
