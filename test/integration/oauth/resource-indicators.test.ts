import { sha256Hex } from '@gatehouse/verifier/shared'
import * as client from 'openid-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_RESOURCE_IDENTIFIERS } from '../../../src/operator/resources.js'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { type ApplicationFixture, basicAuth, createApplication } from '../../helpers/factories.js'
import { listenOnLoopback } from '../../helpers/loopback.js'
import { consentFields, loggedInUser } from './helpers.js'
import type { BrowserSession } from '../../helpers/browser-session.js'
import { type CliResult, runCliOn } from '../../helpers/cli.js'

/*
 * Resource indicators (RFC 8707, docs/decisions/025-audiences.md) at the authorization server:
 * identifiers declared on the command line; `resource` at authorize, PAR and every grant of the
 * token endpoint, with openid-client passing it unmodified; the audience narrowed, never
 * widened; invalid_target for what no usable resource server declared; `aud` in introspection
 * and token info; expiry by the injected clock. Tokens without `resource` stay as they were.
 */

let t: TestContext
let base: string
let web: ApplicationFixture
let machine: ApplicationFixture
let api: ApplicationFixture
let mcp: ApplicationFixture
let user: BrowserSession
const REDIRECT = 'http://127.0.0.1:53682/callback'
const API = 'https://api.example.com/'
const MCP = 'https://mcp.example.com/mcp'
const OTHER = 'https://other.example.com/'

function cli(...argv: string[]): Promise<CliResult> {
  return runCliOn(t, argv)
}

beforeAll(async () => {
  const listening = await listenOnLoopback((env) => buildTestApp({ ...env, RESOURCE_TOKEN_TTL_SECONDS_DEFAULT: '1800' }))
  t = listening.t
  base = listening.baseUrl
  web = await createApplication(t.db, { name: 'Team Planner', redirectUris: [REDIRECT], scopes: ['openid', 'read', 'write'] })
  machine = await createApplication(t.db, { name: 'Nightly sync', kind: 'machine', clientCredentialsScopes: ['read'] })
  api = await createApplication(t.db, { name: 'Teams API', resourceServer: true })
  mcp = await createApplication(t.db, { name: 'Teams MCP server', resourceServer: true })
  expect((await cli('apps', 'resources', api.clientId, '--add', API)).code).toBe(0)
  expect((await cli('apps', 'resources', mcp.clientId, '--add', MCP, '--ttl', '600')).code).toBe(0)
  user = await loggedInUser(t.app)
})
afterAll(async () => {
  await t?.close()
})

/** A web application with its own lifetimes (docs/expiring-tokens.md): 15-minute tokens, day-long refresh tokens. */
async function expiringApplication(name: string): Promise<ApplicationFixture> {
  const app = await createApplication(t.db, { name, redirectUris: [REDIRECT], scopes: ['read'] })
  await t.db
    .updateTable('applications')
    .set({ access_token_ttl_seconds: 900, refresh_token_ttl_seconds: 86_400 })
    .where('id', '=', app.id)
    .execute()
  return app
}

function relyingParty(of: ApplicationFixture): Promise<client.Configuration> {
  return client.discovery(new URL(base), of.clientId, of.clientSecret, undefined, { execute: [client.allowInsecureRequests] })
}

/** `resource` once per identifier, as RFC 8707 §2 sends several. */
function withResources(params: Record<string, string>, resources: readonly string[]): URLSearchParams {
  const p = new URLSearchParams(params)
  for (const r of resources) p.append('resource', r)
  return p
}

/** The user's part: consent when asked (its page returned too), then the redirect back. */
async function usersPart(url: URL): Promise<{ callback: URL; consentPage: string | undefined }> {
  const first = await user.get(url.pathname + url.search)
  if (first.statusCode === 302) return { callback: new URL(String(first.headers.location)), consentPage: undefined }
  expect(first.statusCode, first.body.slice(0, 500)).toBe(200)
  const approved = await user.post('/oauth/authorize', { ...consentFields(first.body), decision: 'approve' })
  expect(approved.statusCode).toBe(303)
  return { callback: new URL(String(approved.headers.location)), consentPage: first.body }
}

async function codeFor(config: client.Configuration, resources: readonly string[], scope = 'read', extra: Record<string, string> = {}) {
  const verifier = client.randomPKCECodeVerifier()
  const params = withResources(
    {
      redirect_uri: REDIRECT,
      scope,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      ...extra,
    },
    resources,
  )
  return { ...(await usersPart(client.buildAuthorizationUrl(config, params))), verifier }
}

function introspect(token: string) {
  return t.app
    .inject({
      method: 'POST',
      url: '/oauth/introspect',
      headers: { authorization: basicAuth(api.clientId, api.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
      payload: `token=${token}`,
    })
    .then((r) => r.json<Record<string, unknown>>())
}

function tokenInfo(token: string) {
  return t.app.inject({ method: 'GET', url: '/oauth/token/info', headers: { authorization: `Bearer ${token}` } })
}

function post(url: string, of: ApplicationFixture, body: URLSearchParams) {
  return t.app.inject({
    method: 'POST',
    url,
    headers: { authorization: basicAuth(of.clientId, of.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: body.toString(),
  })
}

const audienceOf = async (token: string) =>
  await t.db
    .selectFrom('access_tokens')
    .select(['audience', 'expires_at'])
    .where('token_hash', '=', sha256Hex(token))
    .executeTakeFirstOrThrow()

describe('declaring resource identifiers', () => {
  it('on the command line: added, listed, refused when malformed, taken or not a resource server; audited', async () => {
    const shown = await cli('apps', 'resources', mcp.clientId, '--json')
    expect(JSON.parse(shown.out)).toMatchObject({ resource_identifiers: [MCP], resource_token_ttl_seconds: 600, resource_server: true })

    const refusals = [
      ['--add', 'http://api.example.com/'],
      ['--add', `${API}#part`],
      ['--add', 'api.example.com'],
      ['--add', 'https://user:pw@api.example.com/'],
      ['--add', API],
      ['--ttl', '5'],
    ]
    for (const flags of refusals) {
      const refused = await cli('apps', 'resources', mcp.clientId, ...flags)
      expect(refused.code, flags.join(' ')).toBe(1)
    }
    expect((await cli('apps', 'resources', mcp.clientId, '--add', API)).err).toContain('declared by another application')
    // Loopback http only while PUBLIC_URL is http loopback, as this test's is.
    const loopback = await cli('apps', 'resources', mcp.clientId, '--add', 'http://127.0.0.1:8080/mcp', '--json')
    expect(loopback.code, loopback.err).toBe(0)
    expect((await cli('apps', 'resources', mcp.clientId, '--remove', 'http://127.0.0.1:8080/mcp')).code).toBe(0)

    // Kept normalised: the API's identifier typed another way is the same one.
    expect((await cli('apps', 'resources', mcp.clientId, '--add', 'HTTPS://API.Example.com:443')).err).toContain(
      'https://api.example.com/ is declared by another application',
    )

    // At most MAX_RESOURCE_IDENTIFIERS per server, counting what the change removes.
    const wide = await createApplication(t.db, { name: 'Wide API', resourceServer: true })
    const paths = Array.from({ length: MAX_RESOURCE_IDENTIFIERS + 1 }, (_, i) => `https://wide.example.com/v${i}`)
    const over = await cli('apps', 'resources', wide.clientId, ...paths.flatMap((p) => ['--add', p]))
    expect(over.err).toContain(`at most ${MAX_RESOURCE_IDENTIFIERS} identifiers`)
    expect(await t.db.selectFrom('resource_identifiers').where('application_id', '=', wide.id).select('identifier').execute()).toEqual([])
    expect((await cli('apps', 'resources', wide.clientId, ...paths.slice(0, -1).flatMap((p) => ['--add', p]))).code).toBe(0)
    expect((await cli('apps', 'resources', wide.clientId, '--add', paths.at(-1)!)).code).toBe(1)
    const swapped = await cli('apps', 'resources', wide.clientId, '--add', paths.at(-1)!, '--remove', paths[0]!)
    expect(swapped.code, swapped.err).toBe(0)

    const plain = await createApplication(t.db, { name: 'Not an API' })
    const notServer = await cli('apps', 'resources', plain.clientId, '--add', 'https://plain.example.com/')
    expect(notServer.err).toContain('not a resource server')

    const events = await t.db
      .selectFrom('audit_events')
      .select(['event', 'detail'])
      .where('client_id', '=', mcp.clientId)
      .orderBy('id')
      .execute()
    expect(events.map((e) => e.event)).toEqual([
      'application.resources_changed',
      'application.resources_changed',
      'application.resources_changed',
    ])
    expect(events[0]!.detail).toBe(`Added: ${MCP}; Token lifetime: the default to 600 s; from the command line`)
  })
})

describe('the code flow with openid-client', () => {
  it('one resource: the consent page names the API, the token is for it alone, says aud, and expires by the clock', async () => {
    const config = await relyingParty(web)
    const { callback, verifier, consentPage } = await codeFor(config, [API])
    expect(consentPage).toContain('Teams API')
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier }, { resource: API })
    expect(tokens.expires_in).toBe(1800)
    expect(tokens.refresh_token).toBeUndefined()
    expect((await audienceOf(tokens.access_token)).audience).toEqual([API])
    const active = await introspect(tokens.access_token)
    expect(active).toMatchObject({ active: true, aud: API, exp: Math.floor(t.clock().getTime() / 1000) + 1800 })
    expect((await tokenInfo(tokens.access_token)).json()).toMatchObject({ aud: API, expires_in: 1800 })

    t.clock.advance(1800 * 1000)
    expect(await introspect(tokens.access_token)).toEqual({ active: false })
  })

  it('two resources: aud an array; the shortest lifetime; narrowed at the token endpoint, never widened', async () => {
    const config = await relyingParty(web)
    // The consent of the test above named the API alone: the user is asked for the MCP server.
    const first = await codeFor(config, [MCP, API])
    expect(first.consentPage).toContain('Teams MCP server')
    const both = await client.authorizationCodeGrant(
      config,
      first.callback,
      { pkceCodeVerifier: first.verifier },
      withResources({}, [API, MCP]),
    )
    expect(both.expires_in).toBe(600)
    expect(await introspect(both.access_token)).toMatchObject({ active: true, aud: [API, MCP] })

    const second = await codeFor(config, [API, MCP])
    const narrowed = await client.authorizationCodeGrant(config, second.callback, { pkceCodeVerifier: second.verifier }, { resource: MCP })
    expect(await introspect(narrowed.access_token)).toMatchObject({ aud: MCP })

    const third = await codeFor(config, [API])
    const widened = await client
      .authorizationCodeGrant(config, third.callback, { pkceCodeVerifier: third.verifier }, withResources({}, [API, MCP]))
      .catch((e: unknown) => e)
    expect(widened).toMatchObject({ error: 'invalid_target' })
    // The refusal left the code unused; without `resource` it is for everything it was authorized for.
    const all = await client.authorizationCodeGrant(config, third.callback, { pkceCodeVerifier: third.verifier })
    expect(await introspect(all.access_token)).toMatchObject({ aud: API })
  })

  it('a fresh log-in (prompt=login) comes back to the request with its resources', async () => {
    const config = await relyingParty(web)
    const url = client.buildAuthorizationUrl(config, withResources({ redirect_uri: REDIRECT, scope: 'read', prompt: 'login' }, [MCP, API]))
    const res = await user.get(url.pathname + url.search)
    expect(res.statusCode).toBe(303)
    const next = new URL(String(res.headers.location), base).searchParams.get('next')!
    expect(new URLSearchParams(next.slice(next.indexOf('?') + 1)).getAll('resource')).toEqual([API, MCP])
  })

  it('a resource named another way than it was declared is the same one (URL normalisation)', async () => {
    const config = await relyingParty(web)
    const { callback, verifier } = await codeFor(config, ['https://API.example.com'])
    const tokens = await client.authorizationCodeGrant(
      config,
      callback,
      { pkceCodeVerifier: verifier },
      { resource: 'https://api.example.com:443/' },
    )
    expect(await introspect(tokens.access_token)).toMatchObject({ aud: API })
  })

  it('a code authorized for no resource may be narrowed to a declared one', async () => {
    const config = await relyingParty(web)
    const { callback, verifier } = await codeFor(config, [])
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier }, { resource: MCP })
    expect(await introspect(tokens.access_token)).toMatchObject({ aud: MCP })
  })

  it('without resource: exactly the response and token of before, no aud, no exp', async () => {
    const config = await relyingParty(web)
    const { callback, verifier } = await codeFor(config, [])
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier })
    expect(Object.keys(tokens).sort()).toEqual(['access_token', 'created_at', 'scope', 'token_type'])
    expect(await audienceOf(tokens.access_token)).toEqual({ audience: null, expires_at: null })
    const active = await introspect(tokens.access_token)
    expect(active.aud).toBeUndefined()
    expect(active.exp).toBeUndefined()
    expect((await tokenInfo(tokens.access_token)).json()).not.toHaveProperty('aud')
  })

  it("with the client's own lifetimes: its access-token lifetime and a refresh token, which may narrow per refresh", async () => {
    const owned = await expiringApplication('Expiring planner')
    const config = await relyingParty(owned)
    const { callback, verifier } = await codeFor(config, [API, MCP])
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier })
    expect(tokens.expires_in).toBe(900)
    expect(await introspect(tokens.access_token)).toMatchObject({ aud: [API, MCP] })

    const narrowed = await client.refreshTokenGrant(config, tokens.refresh_token!, { resource: API })
    expect(await introspect(narrowed.access_token)).toMatchObject({ aud: API })
    const widened = await client.refreshTokenGrant(config, narrowed.refresh_token!, { resource: OTHER }).catch((e: unknown) => e)
    expect(widened).toMatchObject({ error: 'invalid_target' })
    const again = await client.refreshTokenGrant(config, narrowed.refresh_token!)
    expect(await introspect(again.access_token)).toMatchObject({ aud: [API, MCP] })
  })
})

describe('the token flow', () => {
  it('a token for the API alone, its lifetime in the fragment', async () => {
    await t.db.updateTable('applications').set({ allow_implicit: true }).where('id', '=', web.id).execute()
    const query = withResources({ client_id: web.clientId, response_type: 'token', redirect_uri: REDIRECT, scope: 'read', state: 's' }, [
      API,
    ])
    const page = await user.get(`/oauth/authorize?${query}`)
    expect(page.statusCode, page.body.slice(0, 300)).toBe(200)
    expect(page.body).toContain('Teams API')
    const approved = await user.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
    const fragment = new URLSearchParams(new URL(String(approved.headers.location)).hash.slice(1))
    expect(fragment.get('expires_in')).toBe('1800')
    expect(await introspect(fragment.get('access_token')!)).toMatchObject({ active: true, aud: API })
  })
})

describe('invalid_target', () => {
  const GONE = 'https://gone.example.com/'
  const FORMER = 'https://former.example.com/'
  /** Undeclared, a suspended resource server's, and one no longer marked a resource server. */
  const REFUSED = [OTHER, GONE, FORMER]

  beforeAll(async () => {
    const gone = await createApplication(t.db, { name: 'Suspended API', resourceServer: true })
    const unmarked = await createApplication(t.db, { name: 'Former API', resourceServer: true })
    expect((await cli('apps', 'resources', gone.clientId, '--add', GONE)).code).toBe(0)
    expect((await cli('apps', 'resources', unmarked.clientId, '--add', FORMER)).code).toBe(0)
    expect((await cli('apps', 'suspend', gone.clientId)).code).toBe(0)
    expect((await cli('apps', 'resource-server', unmarked.clientId, 'off')).code).toBe(0)
  })

  it('at authorize: an undeclared, malformed, suspended or unmarked resource goes back to the client', async () => {
    const config = await relyingParty(web)
    for (const resource of [...REFUSED, 'not a uri', `${API}#x`]) {
      const url = client.buildAuthorizationUrl(config, withResources({ redirect_uri: REDIRECT, scope: 'read', state: 's' }, [resource]))
      const res = await user.get(url.pathname + url.search)
      expect(res.statusCode, resource).toBe(302)
      const back = new URL(String(res.headers.location))
      expect(back.origin + back.pathname).toBe(REDIRECT)
      expect(back.searchParams.get('error'), resource).toBe('invalid_target')
      expect(back.searchParams.get('state')).toBe('s')
    }
  })

  it('at PAR, with a valid push stored and used', async () => {
    for (const resource of REFUSED) {
      const refused = await post(
        '/oauth/par',
        web,
        withResources({ response_type: 'code', redirect_uri: REDIRECT, scope: 'read' }, [resource]),
      )
      expect(refused.statusCode, resource).toBe(400)
      expect(refused.json()).toMatchObject({ error: 'invalid_target' })
    }

    const pushed = await post(
      '/oauth/par',
      web,
      withResources({ response_type: 'code', redirect_uri: REDIRECT, scope: 'read' }, [MCP, API]),
    )
    expect(pushed.statusCode, pushed.body).toBe(201)
    const { request_uri: requestUri } = pushed.json<{ request_uri: string }>()
    const answered = await user.get(`/oauth/authorize?${new URLSearchParams({ client_id: web.clientId, request_uri: requestUri })}`)
    expect(answered.statusCode).toBe(302)
    const code = new URL(String(answered.headers.location)).searchParams.get('code')!
    const row = await t.db
      .selectFrom('authorization_codes')
      .select('resources')
      .where('code_hash', '=', sha256Hex(code))
      .executeTakeFirstOrThrow()
    expect(row.resources).toEqual([API, MCP])
  })

  it('at the token endpoint, for each grant', async () => {
    const config = await relyingParty(web)
    const { callback, verifier } = await codeFor(config, [])
    const exchange = {
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    }
    for (const resource of REFUSED) {
      const code = await post('/oauth/token', web, withResources(exchange, [resource]))
      expect(code.statusCode, resource).toBe(400)
      expect(code.json()).toMatchObject({ error: 'invalid_target' })
      const machineToken = await post('/oauth/token', machine, withResources({ grant_type: 'client_credentials' }, [resource]))
      expect(machineToken.statusCode, resource).toBe(400)
      expect(machineToken.json()).toMatchObject({ error: 'invalid_target' })
    }
    // None of the refusals used the code.
    expect((await post('/oauth/token', web, new URLSearchParams(exchange))).statusCode).toBe(200)
    const tooMany = await post(
      '/oauth/token',
      machine,
      withResources(
        { grant_type: 'client_credentials' },
        Array.from({ length: 11 }, (_, i) => `https://api${i}.example.com/`),
      ),
    )
    expect(tooMany.json()).toMatchObject({ error: 'invalid_target' })
  })

  it('at the device authorization endpoint; the device token narrows what the device asked for', async () => {
    await t.db.updateTable('applications').set({ allow_device_flow: true }).where('id', '=', web.id).execute()
    for (const resource of REFUSED) {
      const refused = await post('/oauth/device_authorization', web, withResources({ scope: 'read' }, [resource]))
      expect(refused.json(), resource).toMatchObject({ error: 'invalid_target' })
    }
    const asked = await post('/oauth/device_authorization', web, withResources({ scope: 'read' }, [API, MCP]))
    expect(asked.statusCode, asked.body).toBe(200)
    const { device_code: deviceCode, user_code: userCode } = asked.json<{ device_code: string; user_code: string }>()
    await user.get('/device')
    const page = await user.post('/device', { user_code: userCode })
    expect(page.body).toContain('Teams MCP server')
    const requestId = /name="request_id" value="([^"]+)"/.exec(page.body)![1]!
    expect((await user.post('/device/answer', { request_id: requestId, decision: 'approve' })).statusCode).toBe(200)
    const grant = { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: deviceCode }
    const widened = await post('/oauth/token', web, withResources(grant, [OTHER]))
    expect(widened.json()).toMatchObject({ error: 'invalid_target' })
    const issued = await post('/oauth/token', web, withResources(grant, [MCP]))
    expect(issued.json()).toMatchObject({ expires_in: 600 })
    expect(await introspect(issued.json<{ access_token: string }>().access_token)).toMatchObject({ aud: MCP })
  })
})

describe('client credentials with resource', () => {
  it('a machine token for the API alone, expiring; without resource, as before', async () => {
    const config = await relyingParty(machine)
    const aimed = await client.clientCredentialsGrant(config, { resource: API })
    expect(aimed.expires_in).toBe(1800)
    expect(await introspect(aimed.access_token)).toMatchObject({ active: true, aud: API, sub: machine.clientId })
    const plain = await client.clientCredentialsGrant(config)
    expect(plain.expires_in).toBeUndefined()
    expect(await audienceOf(plain.access_token)).toEqual({ audience: null, expires_at: null })
  })
})

describe('remembered consent covers the APIs the user approved, no more', () => {
  const SIDE = 'https://side.example.com/'
  beforeAll(async () => {
    const side = await createApplication(t.db, { name: 'Side API', resourceServer: true })
    expect((await cli('apps', 'resources', side.clientId, '--add', SIDE)).code).toBe(0)
  })

  /** The first answer to an authorization request: 302 back to the client (remembered) or 200 (the consent page). */
  async function firstAnswer(config: client.Configuration, resources: readonly string[]) {
    const url = client.buildAuthorizationUrl(config, withResources({ redirect_uri: REDIRECT, scope: 'read' }, resources))
    return (await user.get(url.pathname + url.search)).statusCode
  }

  it('consent for one API is not consent for every API, nor for another', async () => {
    const narrow = await createApplication(t.db, { name: 'Narrow planner', redirectUris: [REDIRECT], scopes: ['read'] })
    const config = await relyingParty(narrow)
    expect((await codeFor(config, [API])).consentPage).toContain('Teams API')
    expect(await firstAnswer(config, [API])).toBe(302)
    // Without resource the token would be for every API and never expire: the user is asked.
    expect(await firstAnswer(config, [])).toBe(200)
    expect(await firstAnswer(config, [MCP])).toBe(200)
    expect(await firstAnswer(config, [API, MCP])).toBe(200)

    // Approving the MCP server too: consent covers both, alone or together, and still not all APIs.
    expect((await codeFor(config, [MCP])).consentPage).toContain('Teams MCP server')
    expect(await firstAnswer(config, [API, MCP])).toBe(302)
    expect(await firstAnswer(config, [])).toBe(200)

    // Approving a request without resource is consent for every API, which covers any one.
    expect((await codeFor(config, [])).consentPage).toBeDefined()
    expect(await firstAnswer(config, [])).toBe(302)
    expect(await firstAnswer(config, [SIDE])).toBe(302)
    const grant = await t.db.selectFrom('grants').select('resources').where('application_id', '=', narrow.id).executeTakeFirstOrThrow()
    expect(grant.resources).toBeNull()
  })

  it('a device approval for one API records that API on the grant', async () => {
    const device = await createApplication(t.db, { name: 'Narrow device', redirectUris: [REDIRECT], scopes: ['read'] })
    await t.db.updateTable('applications').set({ allow_device_flow: true }).where('id', '=', device.id).execute()
    const asked = await post('/oauth/device_authorization', device, withResources({ scope: 'read' }, [API]))
    expect(asked.statusCode, asked.body).toBe(200)
    const { user_code: userCode } = asked.json<{ user_code: string }>()
    await user.get('/device')
    const page = await user.post('/device', { user_code: userCode })
    const requestId = /name="request_id" value="([^"]+)"/.exec(page.body)![1]!
    expect((await user.post('/device/answer', { request_id: requestId, decision: 'approve' })).statusCode).toBe(200)
    expect(await firstAnswer(await relyingParty(device), [API])).toBe(302)
    expect(await firstAnswer(await relyingParty(device), [])).toBe(200)
  })
})

describe('a refresh re-checks the resource servers of its audience', () => {
  it('without resource, refused (invalid_target) while one of the family’s servers is suspended or unmarked; narrowed to the others, issued', async () => {
    const PAUSED = 'https://paused.example.com/'
    const paused = await createApplication(t.db, { name: 'Paused API', resourceServer: true })
    expect((await cli('apps', 'resources', paused.clientId, '--add', PAUSED)).code).toBe(0)
    const owned = await expiringApplication('Refreshing planner')
    const config = await relyingParty(owned)
    const { callback, verifier } = await codeFor(config, [API, PAUSED])
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier })
    expect(await introspect(tokens.access_token)).toMatchObject({ aud: [API, PAUSED] })

    for (const [off, on] of [
      [
        ['apps', 'suspend', paused.clientId],
        ['apps', 'unsuspend', paused.clientId],
      ],
      [
        ['apps', 'resource-server', paused.clientId, 'off'],
        ['apps', 'resource-server', paused.clientId, 'on'],
      ],
    ]) {
      expect((await cli(...off!)).code).toBe(0)
      const named = await client.refreshTokenGrant(config, tokens.refresh_token!, { resource: PAUSED }).catch((e: unknown) => e)
      expect(named).toMatchObject({ error: 'invalid_target' })
      const unnamed = await client.refreshTokenGrant(config, tokens.refresh_token!).catch((e: unknown) => e)
      expect(unnamed, off!.join(' ')).toMatchObject({ error: 'invalid_target' })
      expect((await cli(...on!)).code).toBe(0)
    }
    // The refusals used nothing: narrowed to the usable API, or with every server usable again, it refreshes.
    const narrowed = await client.refreshTokenGrant(config, tokens.refresh_token!, { resource: API })
    expect(await introspect(narrowed.access_token)).toMatchObject({ aud: API })
    const all = await client.refreshTokenGrant(config, narrowed.refresh_token!)
    expect(await introspect(all.access_token)).toMatchObject({ aud: [API, PAUSED] })
  })
})

describe('the client is authenticated before its resource is judged (RFC 6749 §5.2)', () => {
  it('a wrong secret with a malformed resource is invalid_client, for every grant', async () => {
    const device = await createApplication(t.db, { name: 'Wrong-secret device', redirectUris: [REDIRECT], scopes: ['read'] })
    await t.db.updateTable('applications').set({ allow_device_flow: true }).where('id', '=', device.id).execute()
    const grants: [ApplicationFixture, Record<string, string>][] = [
      [machine, { grant_type: 'client_credentials' }],
      [web, { grant_type: 'refresh_token', refresh_token: 'r'.repeat(43) }],
      [web, { grant_type: 'authorization_code', code: 'c'.repeat(43), redirect_uri: REDIRECT, code_verifier: 'v'.repeat(43) }],
      [device, { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: 'd'.repeat(43) }],
    ]
    for (const [of, grant] of grants) {
      for (const resource of ['not a uri', `${API}#x`]) {
        const res = await post('/oauth/token', { ...of, clientSecret: 'not-the-secret' }, withResources(grant, [resource]))
        expect(res.statusCode, `${grant.grant_type} ${resource}`).toBe(401)
        expect(res.json()).toMatchObject({ error: 'invalid_client' })
        // With the right secret the resource is what is wrong.
        const right = await post('/oauth/token', of, withResources(grant, [resource]))
        expect(right.json(), `${grant.grant_type} ${resource}`).toMatchObject({ error: 'invalid_target' })
      }
    }
  })
})

describe('UserInfo takes a token for this server, not one for another API (RFC 6750 §3.1)', () => {
  function userInfo(token: string) {
    return t.app.inject({ method: 'GET', url: '/oauth/userinfo', headers: { authorization: `Bearer ${token}` } })
  }

  async function tokenFor(resources: readonly string[]) {
    // A second later than the grant's earlier tokens: MAX_TOKENS_PER_GRANT keeps the newest, and
    // among tokens of one instant any may go.
    t.clock.advance(1000)
    const config = await relyingParty(web)
    const { callback, verifier } = await codeFor(config, resources, 'openid read')
    return (await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier })).access_token
  }

  it('a token whose audience names other APIs only is invalid_token; one naming the issuer, or none, is answered', async () => {
    const forApi = await tokenFor([API])
    const sub = (
      await t.db.selectFrom('access_tokens').select('user_id').where('token_hash', '=', sha256Hex(forApi)).executeTakeFirstOrThrow()
    ).user_id!
    const elsewhere = await userInfo(forApi)
    expect(elsewhere.statusCode).toBe(401)
    expect(elsewhere.headers['www-authenticate']).toContain('error="invalid_token"')
    expect(elsewhere.body).not.toContain(sub)

    // An operator may declare Gatehouse's own URL for its APIs (here http on loopback, as PUBLIC_URL is).
    const own = await createApplication(t.db, { name: 'Gatehouse itself', resourceServer: true })
    const declared = await cli('apps', 'resources', own.clientId, '--add', base)
    expect(declared.code, declared.err).toBe(0)
    const here = await userInfo(await tokenFor([API, base]))
    expect(here.statusCode, here.body).toBe(200)
    expect(here.json()).toMatchObject({ sub })

    const everywhere = await userInfo(await tokenFor([]))
    expect(everywhere.statusCode).toBe(200)
  })
})

describe('the code exchange without resource, for a code authorized for resources', () => {
  let counted: ApplicationFixture
  beforeAll(async () => {
    // Its own grant: that of `web` holds so many tokens by now that the quota evicts some of the same instant.
    counted = await createApplication(t.db, { name: 'Counted planner', redirectUris: [REDIRECT], scopes: ['read'] })
  })

  async function countedExchange(resources: readonly string[]) {
    const config = await relyingParty(counted)
    const { callback, verifier } = await codeFor(config, [API, MCP])
    // The quota's eviction of earlier tokens (MAX_TOKENS_PER_GRANT) runs after their responses: not this exchange's.
    await t.deps.tokenQuota.settled()
    const before = t.queries.count
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier }, withResources({}, resources))
    const queries = t.queries.count - before
    await t.deps.tokenQuota.settled()
    return { tokens, queries }
  }

  it('is the one statement of an exchange that names them: the same round trips, the same token', async () => {
    const named = await countedExchange([API, MCP])
    const unnamed = await countedExchange([])
    expect(unnamed.queries).toBe(named.queries)
    expect(unnamed.tokens.expires_in).toBe(600)
    expect(await introspect(unnamed.tokens.access_token)).toMatchObject({ active: true, aud: [API, MCP] })
  })

  it('is refused with invalid_target while one of its servers is suspended, and the code stays unused', async () => {
    const HELD = 'https://held.example.com/'
    const held = await createApplication(t.db, { name: 'Held API', resourceServer: true })
    expect((await cli('apps', 'resources', held.clientId, '--add', HELD)).code).toBe(0)
    const config = await relyingParty(web)
    const { callback, verifier } = await codeFor(config, [API, HELD])
    expect((await cli('apps', 'suspend', held.clientId)).code).toBe(0)
    const refused = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier }).catch((e: unknown) => e)
    expect(refused).toMatchObject({ error: 'invalid_target' })
    const narrowed = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier }, { resource: API })
    expect(await introspect(narrowed.access_token)).toMatchObject({ aud: API })
  })
})
