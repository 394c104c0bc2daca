import * as client from 'openid-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { COMMAND_LINE } from '../../../src/audit/actor.js'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { expectAccessiblePage } from '../../helpers/console.js'
import { listenOnLoopback } from '../../helpers/loopback.js'
import { type DocumentServer, startDocumentServer } from '../../helpers/metadata-document-server.js'
import { signInWithOpenIdClient } from '../../helpers/oidc-sign-in.js'
import { CHALLENGE, VERIFIER, authorizeUrl, consentFields, exchange, locationParams, tokenRow } from './helpers.js'

/*
 * Clients without registration (docs/agents.md): with CLIENT_ID_METADATA_DOCUMENTS off, an https
 * client_id is an unknown client and nothing is fetched; on, a public client identified by its
 * document on a real loopback https server completes the code flow with PKCE through
 * openid-client, its consent page says it is not registered, the operator sees and suspends it,
 * its user revokes it, and the janitor removes it when unused. Both engines.
 */

let docs: DocumentServer
beforeAll(async () => {
  docs = await startDocumentServer()
})
afterAll(async () => {
  await docs.close()
})

const LOOPBACK = 'http://127.0.0.1:53690/callback'
const s256 = { code_challenge: CHALLENGE, code_challenge_method: 'S256' }

/** The settings of a development set-up: documents on loopback, the test's CA trusted. */
function enabled(extra: Record<string, string> = {}): Record<string, string> {
  return {
    CLIENT_ID_METADATA_DOCUMENTS: 'true',
    CLIENT_ID_METADATA_ALLOW_PRIVATE_ADDRESSES: 'true',
    CLIENT_ID_METADATA_EXTRA_CA_FILE: docs.caFile!,
    LOGIN_RATE_LIMIT: '10000',
    ...extra,
  }
}

describe('off, the default', () => {
  let t: TestContext
  beforeAll(async () => {
    t = await buildTestApp()
  })
  afterAll(() => t.close())

  it('treats an https client_id as an unknown client, fetches nothing, and says nothing in discovery', async () => {
    const url = docs.document('/off.json', { redirect_uris: [LOOPBACK] })
    const before = docs.connections
    const user = await new BrowserSession(t.app).signUpAndLogIn('off@example.com')
    const page = await user.get(authorizeUrl({ response_type: 'code', client_id: url, redirect_uri: LOOPBACK, ...s256 }))
    expect(page.statusCode).toBe(400)
    expect(page.body).toContain('No application is registered with this client_id.')
    expect(docs.connections).toBe(before)
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const metadata = (await t.app.inject({ method: 'GET', url: path })).json()
      expect(metadata).not.toHaveProperty('client_id_metadata_document_supported')
    }
    // A client stored while the setting was on is unknown too.
    await t.db
      .insertInto('applications')
      .values({
        client_id: url,
        kind: 'native',
        secret_hash: null,
        owner_id: null,
        name: 'Stored earlier',
        redirect_uris: [LOOPBACK],
        allowed_scopes: ['read'],
        require_pkce: true,
        created_at: new Date(),
        updated_at: new Date(),
        metadata_fetched_at: new Date(),
      })
      .execute()
    const again = await user.get(authorizeUrl({ response_type: 'code', client_id: url, redirect_uri: LOOPBACK, ...s256 }))
    expect(again.body).toContain('No application is registered with this client_id.')
    expect(docs.connections).toBe(before)
  })
})

/** A form POST to `url` of `t`'s app. */
function postForm(t: TestContext, url: string, fields: Record<string, string>) {
  return t.app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(fields).toString(),
  })
}

describe('turned off, or its host blocked, after a client was stored', () => {
  let on: TestContext
  let url: string
  let held: { code: string; accessToken: string; refreshToken: string }
  beforeAll(async () => {
    on = await buildTestApp(enabled())
    url = docs.document('/switched-off.json', { redirect_uris: [LOOPBACK] })
    const user = await new BrowserSession(on.app).signUpAndLogIn('switched-off@example.com')
    const ask = () => user.get(authorizeUrl({ response_type: 'code', client_id: url, redirect_uri: LOOPBACK, scope: 'read', ...s256 }))
    const first = await ask()
    expect(first.statusCode).toBe(200)
    // Expiring tokens, so that the client holds a refresh token too (docs/expiring-tokens.md).
    await on.db
      .updateTable('applications')
      .set({ access_token_ttl_seconds: 3600, refresh_token_ttl_seconds: 86_400 })
      .where('client_id', '=', url)
      .execute()
    const approve = async (page: { body: string }) =>
      locationParams(await user.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })).get('code')!
    const exchanged = await exchange(
      on.app,
      { id: '', clientId: url, clientSecret: '', redirectUri: LOOPBACK },
      { code: await approve(first), code_verifier: VERIFIER, client_secret: undefined },
    )
    expect(exchanged.statusCode, exchanged.body).toBe(200)
    const tokens = exchanged.json()
    held = { code: await approve(await ask()), accessToken: tokens.access_token, refreshToken: tokens.refresh_token }
    expect(held.refreshToken).toBeTypeOf('string')
  })
  afterAll(() => on.close())

  for (const [setting, env] of [
    ['off', () => ({})],
    ['on with its host blocked', () => enabled({ CLIENT_ID_METADATA_BLOCKED_HOSTS: '127.0.0.1' })],
  ] as const) {
    it(`${setting}: the client is unknown at the token endpoint, PAR, the device flow and revocation, while its access token works until revoked`, async () => {
      const t = await buildTestApp(env(), on.testDb)
      try {
        const before = docs.connections
        const answers = [
          await exchange(
            t.app,
            { id: '', clientId: url, clientSecret: '', redirectUri: LOOPBACK },
            { code: held.code, code_verifier: VERIFIER, client_secret: undefined },
          ),
          await postForm(t, '/oauth/token', { grant_type: 'refresh_token', refresh_token: held.refreshToken, client_id: url }),
          await postForm(t, '/oauth/par', {
            client_id: url,
            response_type: 'code',
            redirect_uri: LOOPBACK,
            scope: 'read',
            ...s256,
          }),
          await postForm(t, '/oauth/device_authorization', { client_id: url, scope: 'read' }),
          await postForm(t, '/oauth/revoke', { client_id: url, token: held.accessToken }),
        ]
        for (const answer of answers) {
          expect(answer.statusCode, answer.body).toBe(401)
          expect(answer.json()).toMatchObject({ error: 'invalid_client' })
        }
        expect(docs.connections).toBe(before)
        const info = await t.app.inject({
          method: 'GET',
          url: '/oauth/token/info',
          headers: { authorization: `Bearer ${held.accessToken}` },
        })
        expect(info.statusCode, info.body).toBe(200)
      } finally {
        await t.close()
      }
    })
  }
})

describe('on', () => {
  let t: TestContext
  let issuer: URL
  beforeAll(async () => {
    const listening = await listenOnLoopback((env) => buildTestApp({ ...enabled(), ...env }))
    t = listening.t
    issuer = new URL(listening.baseUrl)
  })
  afterAll(() => t.close())

  it('says so in both discovery documents', async () => {
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      expect((await t.app.inject({ method: 'GET', url: path })).json()).toMatchObject({ client_id_metadata_document_supported: true })
    }
  })

  it('lets openid-client sign a user in as a public client named by its document, with PKCE', async () => {
    const url = docs.document('/assistant.json', { redirect_uris: [LOOPBACK] })
    const config = await client.discovery(issuer, url, undefined, client.None(), { execute: [client.allowInsecureRequests] })
    const browser = await new BrowserSession(t.app).signUpAndLogIn('assistant-user@example.com')
    const { tokens } = await signInWithOpenIdClient(config, browser, { redirectUri: LOOPBACK, scope: 'openid read' })
    expect(tokens.claims()?.aud).toBe(url)
    const row = await t.db.selectFrom('applications').selectAll().where('client_id', '=', url).executeTakeFirstOrThrow()
    expect(row).toMatchObject({ owner_id: null, kind: 'native', secret_hash: null, require_pkce: true, redirect_uris: [LOOPBACK] })
    expect(row.metadata_fetched_at).not.toBeNull()
    const events = await t.db.selectFrom('audit_events').select(['event', 'client_id']).where('client_id', '=', url).execute()
    expect(events.map((e) => e.event).sort()).toEqual(['client.metadata_fetched', 'grant.given'])
  })

  it('lets a client whose first request is a pushed one (RFC 9126) sign a user in, through openid-client', async () => {
    const url = docs.document('/pushed-first.json', { redirect_uris: [LOOPBACK] })
    const config = await client.discovery(issuer, url, undefined, client.None(), { execute: [client.allowInsecureRequests] })
    expect(config.serverMetadata().pushed_authorization_request_endpoint).toBeTypeOf('string')
    const verifier = client.randomPKCECodeVerifier()
    const pushed = await client.buildAuthorizationUrlWithPAR(config, {
      redirect_uri: LOOPBACK,
      scope: 'read',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    })
    expect(pushed.searchParams.get('request_uri')).toMatch(/^urn:ietf:params:oauth:request_uri:/)
    expect(docs.requests.get('/pushed-first.json')).toBe(1)
    const browser = await new BrowserSession(t.app).signUpAndLogIn('pushed-first@example.com')
    const page = await browser.get(pushed.pathname + pushed.search)
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('is not registered with Gatehouse')
    const approved = await browser.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
    expect(approved.statusCode).toBe(303)
    const tokens = await client.authorizationCodeGrant(config, new URL(String(approved.headers.location)), { pkceCodeVerifier: verifier })
    expect(tokens.access_token).toBeTypeOf('string')
  })

  it('shows the consent page with the unmistakable notice and the redirect host', async () => {
    const url = docs.document('/notice.json', { client_name: 'Helpful Bot', redirect_uris: [LOOPBACK] })
    const user = await new BrowserSession(t.app).signUpAndLogIn('notice@example.com')
    const page = await user.get(authorizeUrl({ response_type: 'code', client_id: url, redirect_uri: LOOPBACK, scope: 'read', ...s256 }))
    expect(page.statusCode).toBe(200)
    const host = new URL(url).host
    expect(page.body).toContain(
      `Helpful Bot is not registered with Gatehouse: its identity is only the web address <span class="mono">${host}</span>.`,
    )
    expect(page.body).toContain('127.0.0.1:53690')
    expect(page.body).not.toContain('Registered by')
    const approved = await user.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
    expect(approved.statusCode).toBe(303)
    const code = locationParams(approved).get('code')!
    const token = await exchange(
      t.app,
      { id: '', clientId: url, clientSecret: '', redirectUri: LOOPBACK },
      { code, code_verifier: VERIFIER, client_secret: undefined },
    )
    expect(token.statusCode, token.body).toBe(200)
  })

  it('refuses a redirect_uri its document does not list, and a request without PKCE', async () => {
    const url = docs.document('/strict.json', { redirect_uris: [LOOPBACK] })
    const user = await new BrowserSession(t.app).signUpAndLogIn('strict@example.com')
    const elsewhere = await user.get(
      authorizeUrl({ response_type: 'code', client_id: url, redirect_uri: 'https://attacker.example/cb', ...s256 }),
    )
    expect(elsewhere.statusCode).toBe(400)
    expect(elsewhere.body).toContain('not covered by any redirect URI')
    const noPkce = await user.get(authorizeUrl({ response_type: 'code', client_id: url, redirect_uri: LOOPBACK }))
    // Nobody vouches for its redirect URI: the error is shown, not sent (docs/decisions/005-trusted-redirects.md).
    expect(noPkce.statusCode).not.toBe(302)
    expect(noPkce.body).toMatch(/PKCE|code_challenge/)
  })

  it('matches its redirect URIs exactly as listed, but for the port of a loopback one (RFC 8252 §7.3)', async () => {
    const url = docs.document('/exact.json', { redirect_uris: ['https://client.example/cb', LOOPBACK] })
    const user = await new BrowserSession(t.app).signUpAndLogIn('exact@example.com')
    const ask = (redirectUri: string) =>
      user.get(authorizeUrl({ response_type: 'code', client_id: url, redirect_uri: redirectUri, scope: 'read', ...s256 }))
    for (const listed of ['https://client.example/cb', LOOPBACK, 'http://127.0.0.1:61000/callback']) {
      expect((await ask(listed)).statusCode, listed).toBe(200)
    }
    for (const other of [
      'https://client.example/cb/elsewhere?x=1',
      'https://client.example/cb/',
      'https://client.example/cb?x=1',
      'http://127.0.0.1:53690/callback/sub',
    ]) {
      const page = await ask(other)
      expect(page.statusCode, other).toBe(400)
      expect(page.body).toContain('not covered by any redirect URI')
    }
  })

  it('refuses a document whose client_id is not its URL, and records why', async () => {
    const url = docs.document('/liar.json', { client_id: 'https://famous.example/client.json', redirect_uris: [LOOPBACK] })
    const user = await new BrowserSession(t.app).signUpAndLogIn('liar@example.com')
    const page = await user.get(authorizeUrl({ response_type: 'code', client_id: url, redirect_uri: LOOPBACK, ...s256 }))
    expect(page.statusCode).toBe(400)
    expect(page.body).toContain('No application is registered with this client_id.')
    const event = await t.db.selectFrom('audit_events').selectAll().where('client_id', '=', url).executeTakeFirstOrThrow()
    expect(event).toMatchObject({ event: 'client.metadata_refused' })
    expect(event.detail).toContain('client_id is not its URL')
    expect(await t.db.selectFrom('applications').select('id').where('client_id', '=', url).executeTakeFirst()).toBeUndefined()
  })

  it('lists it for the user, who revokes it; the operator finds and suspends it', async () => {
    const url = docs.document('/listed.json', { client_name: 'Listed Bot', redirect_uris: [LOOPBACK] })
    const user = await new BrowserSession(t.app).signUpAndLogIn('listed@example.com')
    const page = await user.get(authorizeUrl({ response_type: 'code', client_id: url, redirect_uri: LOOPBACK, scope: 'read', ...s256 }))
    const approved = await user.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
    const code = locationParams(approved).get('code')!
    const token = (
      await exchange(
        t.app,
        { id: '', clientId: url, clientSecret: '', redirectUri: LOOPBACK },
        { code, code_verifier: VERIFIER, client_secret: undefined },
      )
    ).json().access_token as string

    const list = await user.get('/authorized-applications')
    expect(list.body).toContain('Listed Bot')
    expect(list.body).toContain(`identified only by the web address ${new URL(url).host}`)
    const grantId = /action="\/authorized-applications\/([^/]+)\/revoke"/.exec(list.body)![1]!
    const revoked = await user.post(`/authorized-applications/${grantId}/revoke`, {})
    expect(revoked.statusCode).toBe(303)
    expect((await tokenRow(t.db, token))?.revoked_at).not.toBeNull()

    const app = await t.db.selectFrom('applications').select('id').where('client_id', '=', url).executeTakeFirstOrThrow()
    const found = await t.deps.operator.searchApplications({ metadataClients: true })
    expect(found.map((a) => a.client_id)).toContain(url)
    expect(found.every((a) => a.owner_id === null)).toBe(true)
    await t.db.updateTable('users').set({ is_operator: true }).where('email', '=', 'listed@example.com').execute()
    const listing = await user.get('/admin/applications?unregistered=1')
    expect(listing.statusCode).toBe(200)
    expectAccessiblePage(listing.body)
    expect(listing.body).toContain(url)
    expect(listing.body).toMatch(/\d+ clients without registration are stored, at most 10000\./)
    // The pager keeps the filter.
    const second = await user.get('/admin/applications?unregistered=1&page=2')
    expect(second.body).toContain('href="/admin/applications?q=&amp;unregistered=1&amp;page=1"')
    const shown = await user.get(`/admin/applications/${app.id}`)
    expect(shown.statusCode).toBe(200)
    expectAccessiblePage(shown.body)
    expect(shown.body).toContain('Document last fetched')
    expect(shown.body).not.toContain(`/admin/applications/${app.id}/delete`)
    await t.deps.operator.suspendApplication(COMMAND_LINE, app.id)
    const suspended = await user.get(authorizeUrl({ response_type: 'code', client_id: url, redirect_uri: LOOPBACK, ...s256 }))
    expect(suspended.statusCode).toBe(400)
    expect(suspended.body).toContain('suspended by the operator')
    // A later fetch of its document does not lift the suspension.
    t.clock.advance(3_600_000)
    const later = await user.get(authorizeUrl({ response_type: 'code', client_id: url, redirect_uri: LOOPBACK, ...s256 }))
    expect(later.body).toContain('suspended by the operator')
  })

  it('refuses to verify it or make it a resource server, and a refetch clears a verification set before', async () => {
    const url = docs.document('/unvouched.json', { redirect_uris: [LOOPBACK] })
    const user = await new BrowserSession(t.app).signUpAndLogIn('unvouched@example.com')
    const ask = () => user.get(authorizeUrl({ response_type: 'code', client_id: url, redirect_uri: LOOPBACK, ...s256 }))
    expect((await ask()).statusCode).toBe(200)
    const app = await t.db.selectFrom('applications').select('id').where('client_id', '=', url).executeTakeFirstOrThrow()
    for (const change of [
      () => t.deps.operator.setVerified(COMMAND_LINE, app.id, true),
      () => t.deps.operator.setResourceServer(COMMAND_LINE, app.id, true),
      () => t.deps.operator.deleteApplication(COMMAND_LINE, app.id),
    ]) {
      await expect(change()).rejects.toThrow(/without registration/)
    }
    // Through /admin too, where the buttons are not shown: a refusal page, not a server error.
    await t.db.updateTable('users').set({ is_operator: true }).where('email', '=', 'unvouched@example.com').execute()
    await user.get(`/admin/applications/${app.id}`)
    for (const action of ['verify', 'resource-server-on', 'delete']) {
      const refused = await user.post(`/admin/applications/${app.id}/${action}`, {})
      expect(refused.statusCode, action).toBe(409)
      expect(refused.body).toContain('A client without registration is not')
    }
    const flags = () =>
      t.db.selectFrom('applications').select(['verified_at', 'is_resource_server']).where('id', '=', app.id).executeTakeFirstOrThrow()
    expect(await flags()).toEqual({ verified_at: null, is_resource_server: false })
    // A row verified by an earlier version: the next fetch of its document clears it.
    await t.db.updateTable('applications').set({ verified_at: t.clock() }).where('id', '=', app.id).execute()
    t.clock.advance(3_600_000)
    expect((await ask()).statusCode).toBe(200)
    expect((await flags()).verified_at).toBeNull()
  })

  it('lets the janitor remove a client unused for CLIENT_ID_METADATA_UNUSED_DAYS that holds no grant and is not suspended', async () => {
    const unused = docs.document('/unused.json', { redirect_uris: [LOOPBACK] })
    const user = await new BrowserSession(t.app).signUpAndLogIn('janitor-user@example.com')
    const page = await user.get(authorizeUrl({ response_type: 'code', client_id: unused, redirect_uri: LOOPBACK, ...s256 }))
    expect(page.statusCode).toBe(200)
    const granted = docs.document('/granted.json', { redirect_uris: [LOOPBACK] })
    const consent = await user.get(authorizeUrl({ response_type: 'code', client_id: granted, redirect_uri: LOOPBACK, ...s256 }))
    await user.post('/oauth/authorize', { ...consentFields(consent.body), decision: 'approve' })
    t.clock.advance(31 * 86_400_000)
    await t.deps.janitor.runOnce()
    // The suspended one of the test above holds no grant any more, and stays: its next request finds it suspended.
    const suspended = `${docs.origin}/listed.json`
    const left = await t.db.selectFrom('applications').select('client_id').where('client_id', 'in', [unused, granted, suspended]).execute()
    expect(left.map((r) => r.client_id).sort()).toEqual([granted, suspended].sort())
  })
})

describe('bounds', () => {
  it('refuses a blocked host without connecting', async () => {
    const t = await buildTestApp(enabled({ CLIENT_ID_METADATA_BLOCKED_HOSTS: '127.0.0.1' }))
    try {
      const url = docs.document('/blocked.json', { redirect_uris: [LOOPBACK] })
      const before = docs.connections
      const user = await new BrowserSession(t.app).signUpAndLogIn('blocked@example.com')
      const page = await user.get(authorizeUrl({ response_type: 'code', client_id: url, redirect_uri: LOOPBACK, ...s256 }))
      expect(page.statusCode).toBe(400)
      expect(docs.connections).toBe(before)
    } finally {
      await t.close()
    }
  })

  it('refuses a new client beyond CLIENT_ID_METADATA_MAX_CLIENTS', async () => {
    const t = await buildTestApp(enabled({ CLIENT_ID_METADATA_MAX_CLIENTS: '1' }))
    try {
      const user = await new BrowserSession(t.app).signUpAndLogIn('bounded@example.com')
      const first = docs.document('/first.json', { redirect_uris: [LOOPBACK] })
      const second = docs.document('/second.json', { redirect_uris: [LOOPBACK] })
      expect((await user.get(authorizeUrl({ response_type: 'code', client_id: first, redirect_uri: LOOPBACK, ...s256 }))).statusCode).toBe(
        200,
      )
      expect((await user.get(authorizeUrl({ response_type: 'code', client_id: second, redirect_uri: LOOPBACK, ...s256 }))).statusCode).toBe(
        400,
      )
      const event = await t.db.selectFrom('audit_events').selectAll().where('client_id', '=', second).executeTakeFirstOrThrow()
      expect(event.detail).toContain('maximum of 1 clients')
    } finally {
      await t.close()
    }
  })
})
