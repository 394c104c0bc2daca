import { type Server, type ServerResponse, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildResourceApi } from '../../../examples/resource-api.js'
import { DPOP_SIGNING_ALGS } from '@gatehouse/verifier/shared'
import {
  type RequestWithToken,
  type Verifier,
  authenticateRequest,
  createVerifier,
  requireToken,
  resourceMetadataHandler,
} from '@gatehouse/verifier'
import { createAccessToken } from '../../helpers/factories.js'
import { type DpopKey, dpopKey } from '../../helpers/dpop.js'
import { listenOnFreePort } from '../../helpers/app.js'
import { resourceServerTestFile } from '../../helpers/file-set-up.js'

/*
 * Audiences (RFC 8707) at a resource server, against a real Gatehouse: the verifier with a
 * `resource`, in database mode (the live-token view's audience) and introspection mode
 * (introspection's `aud`), through the Fastify plugin (the example resource API) and the
 * node:http adapters. A token whose audience names the resource, or that has none, is accepted;
 * a token for other resources is refused 401 invalid_token, cached or not. The API publishes
 * its protected-resource metadata (RFC 9728), at the path-suffixed form too since its
 * identifier has a path, and every 401 names it (§5.1).
 */

const ORIGIN = 'https://api.example.test'
const RESOURCE = `${ORIGIN}/orders`
const OTHER = 'https://other.example.test'
const METADATA_URL = `${ORIGIN}/.well-known/oauth-protected-resource/orders`
const ALGS = `algs="${DPOP_SIGNING_ALGS.join(' ')}"`
const META = `resource_metadata="${METADATA_URL}"`

const { t, user, app, rs } = resourceServerTestFile({ resourceServerName: 'Orders resource server' })

interface Answer {
  status: number
  www: string | undefined
  body: Record<string, unknown> | undefined
}
interface Call {
  method?: 'GET' | 'POST' | 'HEAD' | 'OPTIONS'
  path?: string
  authorization?: string
  dpop?: string
  headers?: Record<string, string>
}
type Caller = (call: Call) => Promise<Answer & { headers: Record<string, string | undefined> }>

const closers: (() => Promise<unknown>)[] = []
const callers: Record<string, Caller> = {}
const verifiers: Record<string, Verifier> = {}
/** The same two modes without `resource`: every audience accepted. */
const unchecked: Record<string, Verifier> = {}
let gatehouse: string
let key: DpopKey

beforeAll(async () => {
  key = await dpopKey()
  gatehouse = await listenOnFreePort(t)
  const now = () => t.clock().getTime()
  const database = () => t.deps.bus.verifierDatabase(t.deps.database)
  const introspection = {
    mode: 'introspection',
    introspectionUrl: `${gatehouse}/oauth/introspect`,
    revocationStreamUrl: `${gatehouse}/oauth/revocations/stream`,
    clientId: rs.clientId,
    clientSecret: rs.clientSecret,
    now,
    publicOrigin: ORIGIN,
  } as const
  verifiers.database = createVerifier({
    mode: 'database',
    database: database(),
    now,
    publicOrigin: ORIGIN,
    resource: RESOURCE,
    issuer: gatehouse,
  })
  verifiers.introspection = createVerifier({ ...introspection, resource: RESOURCE })
  unchecked.database = createVerifier({ mode: 'database', database: database(), now })
  unchecked.introspection = createVerifier(introspection)
  for (const v of [...Object.values(verifiers), ...Object.values(unchecked)]) closers.push(() => v.close())
  await Promise.all([...Object.values(verifiers), ...Object.values(unchecked)].map((v) => v.ready()))
  for (const [mode, verifier] of Object.entries(verifiers)) {
    callers[`${mode}, Fastify`] = fastifyCaller(await buildResourceApi(verifier))
    callers[`${mode}, node`] = await nodeCaller(verifier)
  }
})
afterAll(async () => {
  for (const close of closers.reverse()) await close()
})

function fastifyCaller(api: FastifyInstance): Caller {
  closers.push(() => api.close())
  return async ({ method = 'GET', path = '/me', authorization, dpop, headers = {} }) => {
    const sent: Record<string, string> = { ...headers }
    if (authorization !== undefined) sent.authorization = authorization
    if (dpop !== undefined) sent.dpop = dpop
    const res = await api.inject({ method, url: path, headers: sent, ...(method === 'POST' ? { payload: {} } : {}) })
    return {
      status: res.statusCode,
      www: res.headers['www-authenticate'] as string | undefined,
      body: res.body ? res.json() : undefined,
      headers: Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, v === undefined ? undefined : String(v)])),
    }
  }
}

/** The metadata by resourceMetadataHandler, GET /me through requireToken (Express style), POST /teams through authenticateRequest. */
async function nodeCaller(verifier: Verifier): Promise<Caller> {
  const metadata = resourceMetadataHandler(verifier)
  const me = requireToken(verifier, 'read')
  const send = (res: ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
  const server: Server = createServer((req: RequestWithToken, res) => {
    if (metadata(req, res)) return
    if (req.method === 'GET' && req.url === '/me') return me(req, res, () => send(res, 200, { user_id: req.accessToken!.userId }))
    void authenticateRequest(verifier, req, res, 'write_teams').then((token) => token && send(res, 201, { by: token.subject }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closers.push(() => new Promise((resolve) => server.close(resolve)))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return async ({ method = 'GET', path = '/me', authorization, dpop, headers = {} }) => {
    const sent: Record<string, string> = { ...headers }
    if (authorization !== undefined) sent.authorization = authorization
    if (dpop !== undefined) sent.dpop = dpop
    const res = await fetch(`${base}${path}`, { method, headers: sent })
    const text = await res.text()
    return {
      status: res.status,
      www: res.headers.get('www-authenticate') ?? undefined,
      body: text ? JSON.parse(text) : undefined,
      headers: Object.fromEntries(res.headers),
    }
  }
}

function token(audience: string[] | undefined, fields: { dpopJkt?: string } = {}) {
  return createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes: ['read'], ...(audience ? { audience } : {}), ...fields })
}

const proofFor = (accessToken: string) =>
  key.proof({ method: 'GET', url: `${ORIGIN}/me`, now: Math.floor(t.clock().getTime() / 1000), accessToken })

describe.each(['database', 'introspection'])('the verifier with a resource, %s mode', (mode) => {
  const verifier = () => verifiers[mode]!

  it("reads the audience: from the live-token view, or from introspection's aud (one identifier or several)", async () => {
    for (const audience of [[RESOURCE], [RESOURCE, OTHER]]) {
      const tok = await token(audience)
      const result = await verifier().verify(`Bearer ${tok.token}`)
      expect(result.ok && result.token.audience).toEqual(audience)
    }
    const none = await verifier().verify(`Bearer ${(await token(undefined)).token}`)
    expect(none.ok && none.token.audience).toBeNull()
  })

  it('refuses a token for other resources, looked up and then cached; so does a verifier without resource (RFC 9068 §4)', async () => {
    for (const audience of [[OTHER], [ORIGIN], [`${RESOURCE}/`]]) {
      const tok = await token(audience)
      const first = await verifier().verify(`Bearer ${tok.token}`)
      expect(first).toMatchObject({
        ok: false,
        status: 401,
        error: 'invalid_token',
        description: 'The access token is for another resource',
      })
      // The cached answer is the same refusal, without a lookup.
      expect(verifier().verifyCached(`Bearer ${tok.token}`)).toBe(first)
      expect(await unchecked[mode]!.verify(`Bearer ${tok.token}`)).toMatchObject({ ok: false, status: 401, error: 'invalid_token' })
    }
    // Without resource, a token without an audience is accepted as before; one naming this
    // verifier's would-be resource is refused all the same: it cannot know it is that resource.
    expect((await unchecked[mode]!.verify(`Bearer ${(await token(undefined)).token}`)).ok).toBe(true)
    expect((await unchecked[mode]!.verify(`Bearer ${(await token([RESOURCE])).token}`)).ok).toBe(false)
  })

  it('takes another spelling of the same URL as its resource (RFC 3986 §6.2.2-6.2.3), as a client may send it', async () => {
    const tok = await token(['HTTPS://API.example.test:443/orders'])
    expect((await verifier().verify(`Bearer ${tok.token}`)).ok).toBe(true)
  })
})

describe.each(['database, Fastify', 'database, node', 'introspection, Fastify', 'introspection, node'])('the adapters (%s)', (name) => {
  const call = (c: Call) => callers[name]!(c)

  it('accept a token whose audience names the resource, and a token without an audience, twice (cached)', async () => {
    for (const audience of [[RESOURCE], [RESOURCE, OTHER].sort(), undefined]) {
      const tok = await token(audience)
      for (let i = 0; i < 2; i++) expect(await call({ authorization: `Bearer ${tok.token}` })).toMatchObject({ status: 200 })
    }
  })

  it('refuse a token for another resource with 401 invalid_token, naming the metadata, twice (cached)', async () => {
    const tok = await token([OTHER])
    for (let i = 0; i < 2; i++) {
      const res = await call({ authorization: `Bearer ${tok.token}` })
      expect(res.status).toBe(401)
      expect(res.www).toBe(
        `Bearer realm="gatehouse", error="invalid_token", error_description="The access token is for another resource", ${META}, DPoP ${ALGS}, ${META}`,
      )
      expect(res.body).toEqual({ error: 'invalid_token', error_description: 'The access token is for another resource' })
    }
  })

  it('refuse a bound token for another resource with the DPoP challenge, whatever the proof; accept one for this resource', async () => {
    const other = await token([OTHER], { dpopJkt: key.jkt })
    const res = await call({ authorization: `DPoP ${other.token}`, dpop: await proofFor(other.token) })
    expect(res.status).toBe(401)
    expect(res.www).toBe(`DPoP error="invalid_token", error_description="The access token is for another resource", ${ALGS}, ${META}`)
    const ours = await token([RESOURCE], { dpopJkt: key.jkt })
    expect(await call({ authorization: `DPoP ${ours.token}`, dpop: await proofFor(ours.token) })).toMatchObject({ status: 200 })
  })

  it('name the metadata in every challenge (RFC 9728 §5.1): no token, an unknown one, a missing scope', async () => {
    expect(await call({})).toMatchObject({ status: 401, www: `Bearer realm="gatehouse", ${META}, DPoP ${ALGS}, ${META}` })
    expect((await call({ authorization: 'Bearer gat_unknown' })).www).toMatch(
      new RegExp(`^Bearer realm="gatehouse", error="invalid_token", error_description="[^"]+", ${META}, DPoP ${ALGS}, ${META}$`),
    )
    const reader = await token([RESOURCE])
    const forbidden = await call({ method: 'POST', path: '/teams', authorization: `Bearer ${reader.token}` })
    expect(forbidden.status).toBe(403)
    expect(forbidden.www).toMatch(
      new RegExp(`^Bearer realm="gatehouse", error="insufficient_scope", .*, scope="write_teams", ${META}, DPoP ${ALGS}, ${META}$`),
    )
  })

  it('serve the metadata without a token, at the well-known path and its path-suffixed form (RFC 9728 §3.1)', async () => {
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/orders']) {
      const res = await call({ path })
      expect(res.status).toBe(200)
      expect(res.body).toEqual({
        resource: RESOURCE,
        authorization_servers: [gatehouse],
        scopes_supported: ['read', 'write', 'write_members', 'write_teams', 'write_events', 'write_users'],
        bearer_methods_supported: ['header'],
        dpop_signing_alg_values_supported: [...DPOP_SIGNING_ALGS],
      })
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
      expect(res.headers['cache-control']).toBe('public, max-age=3600')
      expect(res.headers['access-control-allow-origin']).toBe('*')
    }
    const head = await call({ method: 'HEAD', path: '/.well-known/oauth-protected-resource/orders' })
    expect(head).toMatchObject({ status: 200, body: undefined })
    // A browser-based client's preflight, with the header MCP clients send.
    const preflight = await call({
      method: 'OPTIONS',
      path: '/.well-known/oauth-protected-resource/orders',
      headers: {
        origin: 'https://client.example',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'mcp-protocol-version',
      },
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers['access-control-allow-origin']).toBe('*')
  })
})
