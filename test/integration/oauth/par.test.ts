import type { LightMyRequestResponse } from 'fastify'
import { describe, expect, it } from 'vitest'
import { sha256Hex } from '../../../src/lib/crypto.js'
import {
  TEST_ISSUER,
  type TestClient,
  authorizeUrl,
  basic,
  consentFields,
  createClient,
  expectOAuthError,
  grantAccess,
  locationParams,
  loggedInUser,
} from './helpers.js'
import { oauthTestFile } from '../../helpers/oauth-set-up.js'

/*
 * Pushed Authorization Requests (RFC 9126), docs/oauth-endpoints.md "Pushed authorization requests": POST /oauth/par, then GET /oauth/authorize
 * with client_id and the request_uri alone.
 */

const { t } = oauthTestFile()

const PREFIX = 'urn:ietf:params:oauth:request_uri:'

function push(
  client: TestClient,
  fields: Record<string, string | undefined> = {},
  auth: 'post' | 'basic' | 'none' = 'post',
): Promise<LightMyRequestResponse> {
  const body = new URLSearchParams()
  const all = {
    ...(auth === 'post' ? { client_id: client.clientId, client_secret: client.clientSecret } : {}),
    response_type: 'code',
    scope: 'read',
    state: 'pushed-state',
    ...fields,
  }
  for (const [k, v] of Object.entries(all)) if (v !== undefined) body.append(k, v)
  return t.app.inject({
    method: 'POST',
    url: '/oauth/par',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(auth === 'basic' ? { authorization: basic(client.clientId, client.clientSecret) } : {}),
    },
    payload: body.toString(),
  })
}

async function pushed(client: TestClient, fields: Record<string, string | undefined> = {}): Promise<string> {
  const res = await push(client, fields)
  expect(res.statusCode, res.body).toBe(201)
  return res.json().request_uri as string
}

const authorize = (client: TestClient, requestUri: string, extra: Record<string, string> = {}) =>
  authorizeUrl({ client_id: client.clientId, request_uri: requestUri, ...extra })

async function userWithGrant(client: TestClient) {
  const s = await loggedInUser(t.app)
  await grantAccess(t.db, s.email, client.id)
  return s
}

const rows = (client: TestClient) =>
  t.db.selectFrom('pushed_authorization_requests').selectAll().where('application_id', '=', client.id).execute()

function expectInvalidRequestUri(res: LightMyRequestResponse): void {
  expect(res.statusCode).toBe(400)
  expect(res.headers.location).toBeUndefined()
  expect(res.body).toContain('invalid_request_uri')
}

describe('POST /oauth/par', () => {
  it('answers 201 with a single-use request_uri for 60 seconds, storing only its digest', async () => {
    const client = await createClient(t.db)
    for (const auth of ['post', 'basic'] as const) {
      const res = await push(client, {}, auth)
      expect(res.statusCode, res.body).toBe(201)
      expect(res.headers['cache-control']).toBe('no-store')
      const body = res.json()
      expect(Object.keys(body).sort()).toEqual(['expires_in', 'request_uri'])
      expect(body.expires_in).toBe(60)
      expect(body.request_uri).toMatch(/^urn:ietf:params:oauth:request_uri:[A-Za-z0-9_-]{43}$/)
      const random = body.request_uri.slice(PREFIX.length)
      const stored = (await rows(client)).map((r) => r.request_uri_hash)
      expect(stored).toContain(sha256Hex(random))
      expect(JSON.stringify(await rows(client))).not.toContain(random)
      expect(JSON.stringify(await rows(client))).not.toContain(client.clientSecret)
    }
  })

  it('authenticates the client as the token endpoint does', async () => {
    const client = await createClient(t.db)
    expectOAuthError(await push(client, {}, 'none'), 'invalid_client', 401)
    expectOAuthError(await push(client, { client_secret: 'wrong' }), 'invalid_client', 401)
    const badBasic = await t.app.inject({
      method: 'POST',
      url: '/oauth/par',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(client.clientId, 'wrong') },
      payload: 'response_type=code',
    })
    expectOAuthError(badBasic, 'invalid_client', 401)
    expect(badBasic.headers['www-authenticate']).toMatch(/^Basic/)
    expectOAuthError(await push(client, { client_id: 'gh_unknown' }), 'invalid_client', 401)
    expect(await rows(client)).toEqual([])
  })

  it('validates the whole request as /oauth/authorize would, answering in JSON', async () => {
    const client = await createClient(t.db, { requirePkce: true })
    const cases: Array<[Record<string, string>, string]> = [
      [{ scope: 'bogus' }, 'invalid_scope'],
      [{ redirect_uri: 'https://evil.example/cb' }, 'invalid_request'],
      [{ response_type: 'token' }, 'unauthorized_client'],
      [{ code_challenge: undefined as unknown as string }, 'invalid_request'],
      [{ prompt: 'none login' }, 'invalid_request'],
      [{ max_age: '-1' }, 'invalid_request'],
      [{ response_mode: 'bogus' }, 'invalid_request'],
      [{ request: 'x.y.z' }, 'request_not_supported'],
      [{ request_uri: `${PREFIX}abc` }, 'invalid_request'],
    ]
    for (const [fields, error] of cases) expectOAuthError(await push(client, fields), error)
    expect(await rows(client)).toEqual([])
    const repeated = await t.app.inject({
      method: 'POST',
      url: '/oauth/par',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `client_id=${client.clientId}&client_secret=${client.clientSecret}&scope=read&scope=write&response_type=code`,
    })
    expectOAuthError(repeated, 'invalid_request')
  })

  it('keeps at most 100 live requests per application, dropping the oldest', async () => {
    const client = await createClient(t.db)
    const first = await pushed(client)
    for (let i = 0; i < 100; i++) {
      t.clock.advance(1)
      await pushed(client)
    }
    expect((await rows(client)).length).toBe(100)
    const s = await userWithGrant(client)
    expectInvalidRequestUri(await s.get(authorize(client, first)))
  })
})

describe('GET /oauth/authorize with a pushed request', () => {
  it('uses the pushed parameters only, once', async () => {
    const client = await createClient(t.db)
    const s = await userWithGrant(client)
    const uri = await pushed(client)
    const res = await s.get(authorize(client, uri, { state: 'from-query', scope: 'write' }))
    expect(res.statusCode).toBe(302)
    const p = locationParams(res)
    expect(p.get('code')).toMatch(/^gac_/)
    expect(p.get('state')).toBe('pushed-state')
    expect(p.get('iss')).toBe(TEST_ISSUER)
    expect(await rows(client)).toEqual([])
    expectInvalidRequestUri(await s.get(authorize(client, uri)))
  })

  it('survives the log-in page within its minute, and is consumed by the consent page', async () => {
    const client = await createClient(t.db)
    const uri = await pushed(client, { response_mode: 'form_post' })
    const login = await t.app.inject(authorize(client, uri))
    expect(login.statusCode).toBe(303)
    const next = new URL(String(login.headers.location), 'https://x').searchParams.get('next')!
    expect(next).toBe(authorize(client, uri))
    const s = await loggedInUser(t.app)
    t.clock.advance(30_000)
    const page = await s.get(next)
    expect(page.statusCode).toBe(200)
    expect(await rows(client)).toEqual([])
    const res = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toMatch(/<input type="hidden" name="code" value="gac_/)
    expect(res.body).toContain('value="pushed-state"')
  })

  it('expires a minute after the push however often a browser comes back (RFC 9126 2.2)', async () => {
    const client = await createClient(t.db)
    const uri = await pushed(client)
    t.clock.advance(50_000)
    // An anonymous visit at 50 s is sent to log in; it does not move the expiry.
    const login = await t.app.inject(authorize(client, uri))
    expect(login.statusCode).toBe(303)
    expect(String(login.headers.location)).toMatch(/^\/login\?next=/)
    const s = await userWithGrant(client)
    t.clock.advance(11_000)
    expectInvalidRequestUri(await s.get(authorize(client, uri)))
  })

  it('keeps prompt=login and max_age on the server: a forged asking time in the query does not skip the log-in', async () => {
    for (const demand of [{ prompt: 'login' }, { max_age: '0' }]) {
      const client = await createClient(t.db)
      const s = await userWithGrant(client)
      t.clock.advance(1000)
      const uri = await pushed(client, demand)
      let login: URL | undefined
      for (const forged of ['0', String(t.clock().getTime() - 500)]) {
        const res = await s.get(authorize(client, uri, { gatehouse_login_asked: forged }))
        expect(res.statusCode, JSON.stringify(demand)).toBe(303)
        login = new URL(String(res.headers.location), 'https://x')
        expect(login.pathname).toBe('/login')
        expect(login.searchParams.get('fresh')).toBe('1')
        // The way back names the pushed request alone; the time it was pushed is on the server.
        expect(login.searchParams.get('next')).toBe(authorize(client, uri))
      }
      expect(await rows(client)).toHaveLength(1)
      // A log-in after the push answers it.
      t.clock.advance(1000)
      expect((await s.get(`${login!.pathname}${login!.search}`)).statusCode).toBe(200)
      const done = await s.post('/login', { email: s.email, password: 'correct horse battery', next: authorize(client, uri) })
      expect(done.headers.location).toBe(authorize(client, uri))
      const res = await s.get(authorize(client, uri))
      expect(res.statusCode).toBe(302)
      expect(locationParams(res).get('code')).toMatch(/^gac_/)
    }
  })

  it("lets the log-in form end at the pushed request's redirect URI (CSP form-action)", async () => {
    const client = await createClient(t.db, { redirectUris: ['https://one.example/cb', 'https://two.example/cb'] })
    const uri = await pushed(client, { redirect_uri: 'https://two.example/cb' })
    const page = await t.app.inject(`/login?next=${encodeURIComponent(authorize(client, uri))}`)
    expect(page.statusCode).toBe(200)
    expect(String(page.headers['content-security-policy'])).toMatch(/form-action 'self' https:\/\/two\.example:443/)
  })

  it('refuses an expired request_uri, another client_id, and an unknown one, with the error page', async () => {
    const client = await createClient(t.db)
    const other = await createClient(t.db)
    const s = await userWithGrant(client)
    const uri = await pushed(client)
    expectInvalidRequestUri(await s.get(authorize(other, uri)))
    expectInvalidRequestUri(await s.get(authorizeUrl({ request_uri: uri })))
    expectInvalidRequestUri(await s.get(authorize(client, `${PREFIX}unknown-and-long-enough-to-look-up`)))
    expectInvalidRequestUri(await s.get(authorize(client, `${PREFIX}\u00e9`)))
    t.clock.advance(60_001)
    expectInvalidRequestUri(await s.get(authorize(client, uri)))
  })

  it('at 60 seconds exactly the request is gone (expires_at is exclusive)', async () => {
    const client = await createClient(t.db)
    const s = await userWithGrant(client)
    const early = await pushed(client)
    const late = await pushed(client)
    t.clock.advance(59_999)
    expect((await s.get(authorize(client, early))).statusCode).toBe(302)
    t.clock.advance(1)
    expectInvalidRequestUri(await s.get(authorize(client, late)))
  })
})

describe('an application that requires pushed requests', () => {
  it('refuses plain requests and accepts pushed ones', async () => {
    const client = await createClient(t.db)
    await t.db.updateTable('applications').set({ require_pushed_requests: true }).where('id', '=', client.id).execute()
    const s = await userWithGrant(client)
    const plain = await s.get(authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read', state: 'p' }))
    expect(plain.statusCode).toBe(302)
    expect(locationParams(plain).get('error')).toBe('invalid_request')
    expect(locationParams(plain).get('error_description')).toMatch(/pushed authorization requests/)
    const res = await s.get(authorize(client, await pushed(client)))
    expect(locationParams(res).get('code')).toMatch(/^gac_/)
  })

  it('a cached copy from before the setting cannot issue a plain request a code', async () => {
    const client = await createClient(t.db)
    const s = await userWithGrant(client)
    const url = authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read' })
    expect(locationParams(await s.get(url)).get('code')).toMatch(/^gac_/)
    await t.db.updateTable('applications').set({ require_pushed_requests: true }).where('id', '=', client.id).execute()
    expect(locationParams(await s.get(url)).get('error')).toBe('invalid_request')
  })
})

describe('metadata', () => {
  it('names the PAR endpoint, the response modes, and no request objects (RFC 8414, RFC 9126 5)', async () => {
    const res = await t.app.inject('/.well-known/oauth-authorization-server')
    expect(res.json()).toMatchObject({
      pushed_authorization_request_endpoint: `${TEST_ISSUER}/oauth/par`,
      require_pushed_authorization_requests: false,
      response_modes_supported: ['query', 'fragment', 'form_post'],
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
    })
  })
})
