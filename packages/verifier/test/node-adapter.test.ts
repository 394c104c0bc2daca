import { randomBytes } from 'node:crypto'
import { type IncomingMessage, type RequestListener, type Server, type ServerResponse, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Verifier, createVerifier } from '../src/core.js'
import { basicAuthorization } from '../src/introspection-source.js'
import { type RequestWithToken, authenticateRequest, requireToken } from '../src/node.js'
import { formatAccessToken } from '../src/token-format.js'

/*
 * The node:http adapter (and through it Express and Connect) on real sockets. The verifier runs
 * in introspection mode against a stand-in authorization server that speaks RFC 7662, so this
 * package is tested without Gatehouse's server or database.
 */

const RS_ID = 'resource-server'
const RS_SECRET = 'resource-server-secret'

const newToken = () => formatAccessToken(randomBytes(32).toString('base64url'))
const writer = newToken()
const reader = newToken()
/** Well formed, but the stand-in fails on it: the verifier cannot tell whether it is valid. */
const unanswerable = newToken()

/** RFC 7662 2.2 answers, by token; anything else is inactive. */
const introspection: Record<string, object> = {
  [writer]: { active: true, sub: 'u1', client_id: 'c1', scope: 'read write', iat: 1700000000 },
  [reader]: { active: true, sub: 'u2', client_id: 'c1', scope: 'read', iat: 1700000000 },
}

let introspected: string[] = []
let authServer: Server
let verifier: Verifier

async function listen(handler: RequestListener): Promise<{ server: Server; base: string }> {
  const server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

function close(server: Server): Promise<void> {
  server.closeAllConnections()
  return new Promise((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())))
}

async function readBody(req: IncomingMessage): Promise<string> {
  let body = ''
  for await (const chunk of req) body += chunk
  return body
}

beforeAll(async () => {
  const auth = await listen(async (req, res) => {
    const body = await readBody(req)
    if (req.method !== 'POST' || req.url !== '/introspect') return void res.writeHead(404).end()
    // RFC 7662 2.1: the protected resource authenticates itself to the introspection endpoint.
    if (req.headers.authorization !== basicAuthorization(RS_ID, RS_SECRET)) return void res.writeHead(401).end()
    const token = new URLSearchParams(body).get('token') ?? ''
    introspected.push(token)
    if (token === unanswerable) return void res.writeHead(500).end()
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(introspection[token] ?? { active: false }))
  })
  authServer = auth.server
  verifier = createVerifier({
    mode: 'introspection',
    introspectionUrl: `${auth.base}/introspect`,
    clientId: RS_ID,
    clientSecret: RS_SECRET,
  })
  await verifier.ready()
})

afterAll(async () => {
  await verifier?.close()
  if (authServer) await close(authServer)
})

describe('authenticateRequest in a plain node:http handler', () => {
  let api: Server
  let base: string

  beforeAll(async () => {
    ;({ server: api, base } = await listen(async (req, res) => {
      const token = await authenticateRequest(verifier, req, res, 'read')
      if (!token) return
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ user: token.userId, scopes: token.scopes }))
    }))
  })
  afterAll(() => close(api))

  const get = (authorization?: string) => fetch(`${base}/me`, { headers: authorization === undefined ? {} : { authorization } })

  it('answers a request without credentials with 401, a bare challenge and no error body (RFC 6750 3.1)', async () => {
    for (const authorization of [undefined, 'Basic dXNlcjpwYXNz']) {
      const res = await get(authorization)
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toBe(
        'Bearer realm="gatehouse", DPoP algs="ES256 ES384 ES512 EdDSA Ed25519 PS256 PS384 PS512 RS256 RS384 RS512"',
      )
      expect(res.headers.get('cache-control')).toBe('no-store')
      expect(await res.text()).toBe('')
    }
  })

  it('answers a malformed token with 401 invalid_token, without asking the authorization server', async () => {
    introspected = []
    const badChecksum = `${writer.slice(0, -1)}${writer.endsWith('A') ? 'B' : 'A'}`
    for (const bad of ['garbage', badChecksum, `gat_${'x'.repeat(5000)}`]) {
      const res = await get(`Bearer ${bad}`)
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toMatch(
        /^Bearer realm="gatehouse", error="invalid_token", error_description="[^"]+", DPoP algs="[^"]+"$/,
      )
      expect(res.headers.get('content-type')).toMatch(/^application\/json/)
      expect(await res.json()).toEqual({ error: 'invalid_token', error_description: 'The access token is invalid, revoked or malformed' })
    }
    // The checksum of the token format lets the verifier refuse these without a lookup.
    expect(introspected).toEqual([])
  })

  it('answers a well-formed token the authorization server calls inactive with 401 invalid_token', async () => {
    const unknown = newToken()
    const res = await get(`Bearer ${unknown}`)
    expect(res.status).toBe(401)
    expect(await res.json()).toMatchObject({ error: 'invalid_token' })
    expect(introspected).toContain(unknown)
  })

  it('hands the verified token to the handler', async () => {
    const res = await get(`Bearer ${reader}`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ user: 'u2', scopes: ['read'] })
  })
})

describe('requireToken as Express-style middleware', () => {
  let api: Server
  let base: string
  /** The requests that reached the route after the middleware, with what it set. */
  let reached: RequestWithToken['accessToken'][] = []

  beforeAll(async () => {
    const middleware = requireToken(verifier, 'write_teams')
    ;({ server: api, base } = await listen((req: RequestWithToken, res: ServerResponse) => {
      // What Express does with (req, res, next): the route runs only when next() is called.
      middleware(req, res, (err) => {
        if (err) return void res.writeHead(500).end()
        reached.push(req.accessToken)
        res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ created_by: req.accessToken?.userId }))
      })
    }))
  })
  afterAll(() => close(api))

  const post = (token: string) => fetch(`${base}/teams`, { method: 'POST', headers: { authorization: `Bearer ${token}` } })

  it('calls next with req.accessToken set when the token has write, which implies write_teams', async () => {
    reached = []
    const res = await post(writer)
    expect(res.status).toBe(201)
    expect(await res.json()).toEqual({ created_by: 'u1' })
    expect(reached).toEqual([
      {
        kind: 'user',
        userId: 'u1',
        subject: 'u1',
        clientId: 'c1',
        applicationId: null,
        username: null,
        scopes: ['read', 'write'],
        issuedAt: 1700000000,
        expiresAt: null,
        jkt: null,
        audience: null,
      },
    ])
  })

  it('answers 403 insufficient_scope naming the scope (RFC 6750 3.1), and never calls next, for a read token', async () => {
    reached = []
    const res = await post(reader)
    expect(res.status).toBe(403)
    expect(res.headers.get('www-authenticate')).toBe(
      'Bearer realm="gatehouse", error="insufficient_scope", error_description="The access token lacks the scope write_teams", scope="write_teams", DPoP algs="ES256 ES384 ES512 EdDSA Ed25519 PS256 PS384 PS512 RS256 RS384 RS512"',
    )
    expect(await res.json()).toEqual({
      error: 'insufficient_scope',
      error_description: 'The access token lacks the scope write_teams',
      scope: 'write_teams',
    })
    expect(reached).toEqual([])
  })

  it('answers 503 with Retry-After when the token cannot be checked, and never calls next', async () => {
    reached = []
    const res = await post(unanswerable)
    // It fails closed: a token that cannot be checked is not let through.
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toBe('1')
    expect(res.headers.get('www-authenticate')).toBeNull()
    expect(await res.json()).toMatchObject({ error: 'temporarily_unavailable' })
    expect(reached).toEqual([])
  })
})
