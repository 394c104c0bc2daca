import * as client from 'openid-client'
import { sha256Hex } from '../../../src/lib/crypto.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { listenOnLoopback } from '../../helpers/loopback.js'
import { signInWithOpenIdClient } from '../../helpers/oidc-sign-in.js'
import { applicationForm, createApplicationViaConsole, textById } from '../../helpers/console.js'
import {
  CHALLENGE,
  VERIFIER,
  type TestClient,
  authorizeUrl,
  basic,
  consentFields,
  createClient,
  exchange,
  expectOAuthError,
  locationParams,
  obtainCode,
  tokenRow,
} from './helpers.js'

/*
 * Public clients (RFC 6749 2.1; docs/decisions/019-public-clients-and-consent.md): a native app
 * signs a user in with openid-client and no secret, over a loopback redirect (RFC 8252 7.3),
 * and revokes its token; the token endpoint refuses a secret for a public client and a
 * client_id alone for a confidential one; PKCE S256 is required; CORS answers registered
 * single-page apps' origins only; and remembered consent does not skip the page for a redirect
 * URI another app could claim (RFC 8252 8.6).
 */

let t: TestContext
let issuer: URL
let native: TestClient
let spa: TestClient
let web: TestClient
const LOOPBACK = 'http://127.0.0.1:53683/callback'
const SPA_ORIGIN = 'https://spa.example'

beforeAll(async () => {
  const listening = await listenOnLoopback(buildTestApp)
  t = listening.t
  issuer = new URL(listening.baseUrl)
  const scopes = ['openid', 'email', 'profile', 'read']
  native = await createClient(t.db, { kind: 'native', redirectUris: [LOOPBACK, 'com.example.planner:/callback'], scopes })
  spa = await createClient(t.db, { kind: 'spa', redirectUris: [`${SPA_ORIGIN}/callback`], scopes })
  web = await createClient(t.db, { redirectUris: ['https://web.example/cb'], scopes })
})
afterAll(async () => {
  await t.close()
})

const s256 = { code_challenge: CHALLENGE, code_challenge_method: 'S256' }

describe('a native app with openid-client and no secret', () => {
  it('signs a user in over a loopback redirect with PKCE, reads UserInfo, and revokes its token', async () => {
    const config = await client.discovery(issuer, native.clientId, undefined, client.None(), { execute: [client.allowInsecureRequests] })
    expect(config.serverMetadata().token_endpoint_auth_methods_supported).toContain('none')
    const browser = await new BrowserSession(t.app).signUpAndLogIn('native-user@example.com')
    const { tokens } = await signInWithOpenIdClient(config, browser, { redirectUri: LOOPBACK, scope: 'openid email read' })
    expect(tokens.claims()?.aud).toBe(native.clientId)
    const user = await t.db.selectFrom('users').select('id').where('email', '=', 'native-user@example.com').executeTakeFirstOrThrow()
    expect(await client.fetchUserInfo(config, tokens.access_token, user.id)).toMatchObject({ sub: user.id })

    await client.tokenRevocation(config, tokens.access_token)
    expect((await tokenRow(t.db, tokens.access_token))?.revoked_at).not.toBeNull()
  })
})

describe('the token endpoint and public clients', () => {
  it('refuses a secret sent for a public client, in the body or by Basic', async () => {
    const s = await new BrowserSession(t.app).signUpAndLogIn('public-secret@example.com')
    const code = await obtainCode(s, native, { redirect_uri: LOOPBACK, ...s256 })
    const fields = { code, redirect_uri: LOOPBACK, code_verifier: VERIFIER }
    expectOAuthError(await exchange(t.app, native, { ...fields, client_secret: 'anything' }), 'invalid_client', 401)
    const byBasic = await exchange(
      t.app,
      native,
      { ...fields, client_id: undefined, client_secret: undefined },
      {
        authorization: basic(native.clientId, 'anything'),
      },
    )
    expectOAuthError(byBasic, 'invalid_client', 401)
    // The refusals spent nothing: the code still exchanges, with client_id alone.
    const ok = await exchange(t.app, native, { ...fields, client_secret: undefined })
    expect(ok.statusCode, ok.body).toBe(200)
  })

  it('refuses a confidential client that sends client_id alone, even with the right verifier', async () => {
    const s = await new BrowserSession(t.app).signUpAndLogIn('web-public@example.com')
    const code = await obtainCode(s, web, s256)
    const res = await exchange(t.app, web, { code, code_verifier: VERIFIER, client_secret: undefined })
    expectOAuthError(res, 'invalid_client', 401)
    expect(res.json().error_description).toMatch(/client_secret is required/)
    expect((await exchange(t.app, web, { code, code_verifier: VERIFIER })).statusCode).toBe(200)
  })

  it('keeps introspection for confidential clients: client_id alone is refused', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/introspect',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ client_id: native.clientId, token: 'gat_nothing' }).toString(),
    })
    expectOAuthError(res, 'invalid_client', 401)
  })

  it('requires the verifier at the exchange', async () => {
    const s = await new BrowserSession(t.app).signUpAndLogIn('public-noverifier@example.com')
    const code = await obtainCode(s, native, { redirect_uri: LOOPBACK, ...s256 })
    const res = await exchange(t.app, native, { code, redirect_uri: LOOPBACK, client_secret: undefined })
    expectOAuthError(res, 'invalid_grant')
    expect(res.json().error_description).toBe('code_verifier is required')
  })

  it.each([
    ['no code_challenge', {}],
    ['a plain code_challenge', { code_challenge: VERIFIER, code_challenge_method: 'plain' }],
    ['a challenge without its method', { code_challenge: CHALLENGE }],
  ])('refuses an authorization request with %s', async (_, pkce: Record<string, string>) => {
    const s = await new BrowserSession(t.app).signUpAndLogIn(`public-pkce-${Object.keys(pkce).length}@example.com`)
    const res = await s.get(authorizeUrl({ response_type: 'code', client_id: native.clientId, redirect_uri: LOOPBACK, ...pkce }))
    // An unverified application's errors are shown, not redirected (docs/decisions/005-trusted-redirects.md).
    expect(res.statusCode).toBe(400)
    expect(res.body).toContain('invalid_request')
    expect(res.body).toContain('code_challenge_method=S256')
  })
})

function preflight(path: string, origin: string) {
  return t.app.inject({
    method: 'OPTIONS',
    url: path,
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
  })
}

describe('CORS on the token and revocation endpoints', () => {
  it.each(['/oauth/token', '/oauth/revoke'])('%s answers a registered single-page app origin by name, preflight included', async (path) => {
    const pre = await preflight(path, SPA_ORIGIN)
    expect(pre.statusCode).toBe(204)
    expect(pre.headers['access-control-allow-origin']).toBe(SPA_ORIGIN)
    expect(pre.headers['access-control-allow-methods']).toBe('POST')
    // The token endpoint also takes a DPoP proof (RFC 9449 §4.1; docs/dpop.md).
    expect(pre.headers['access-control-allow-headers']).toBe(path === '/oauth/token' ? 'content-type, dpop' : 'content-type')
    expect(pre.headers.vary).toMatch(/Origin/)
    expect(pre.headers['access-control-allow-credentials']).toBeUndefined()
    const refused = await t.app.inject({ method: 'POST', url: path, headers: { origin: SPA_ORIGIN, 'content-length': '0' } })
    expect(refused.statusCode).toBeGreaterThanOrEqual(400)
    expect(refused.headers['access-control-allow-origin']).toBe(SPA_ORIGIN)
  })

  it.each([
    ['an unregistered origin', 'https://evil.example'],
    ["a native app's loopback origin", 'http://127.0.0.1:53683'],
    ["a web application's origin", 'https://web.example'],
  ])('refuses %s', async (_, origin) => {
    for (const path of ['/oauth/token', '/oauth/revoke']) {
      const pre = await preflight(path, origin)
      expect(pre.statusCode).toBe(403)
      expect(pre.headers['access-control-allow-origin']).toBeUndefined()
      const res = await t.app.inject({ method: 'POST', url: path, headers: { origin, 'content-length': '0' } })
      expect(res.headers['access-control-allow-origin']).toBeUndefined()
    }
  })

  it('lets the single-page app exchange its code from its origin', async () => {
    const s = await new BrowserSession(t.app).signUpAndLogIn('spa-user@example.com')
    const code = await obtainCode(s, spa, s256)
    const res = await exchange(t.app, spa, { code, code_verifier: VERIFIER, client_secret: undefined }, { origin: SPA_ORIGIN })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.headers['access-control-allow-origin']).toBe(SPA_ORIGIN)
  })
})

describe('remembered consent for public clients (RFC 8252 8.6)', () => {
  it('asks again for a native app redirecting to a URI another app could claim, but not for a single-page app at https', async () => {
    const s = await new BrowserSession(t.app).signUpAndLogIn('consent-public@example.com')
    for (const app of [native, spa]) await obtainCode(s, app, { redirect_uri: app.redirectUri, ...s256 })
    const again = await s.get(authorizeUrl({ response_type: 'code', client_id: native.clientId, redirect_uri: LOOPBACK, ...s256 }))
    expect(again.statusCode).toBe(200)
    expect(consentFields(again.body)).toHaveProperty('request_id')
    const spaAgain = await s.get(authorizeUrl({ response_type: 'code', client_id: spa.clientId, redirect_uri: spa.redirectUri, ...s256 }))
    expect(spaAgain.statusCode).toBe(302)
    expect(locationParams(spaAgain).get('code')).toBeTruthy()
  })

  it('remembers it for a native app an operator verified', async () => {
    const verified = await createClient(t.db, { kind: 'native', redirectUris: ['com.example.verified:/cb'], scopes: ['read'] })
    await t.db.updateTable('applications').set({ verified_at: new Date() }).where('id', '=', verified.id).execute()
    const s = await new BrowserSession(t.app).signUpAndLogIn('consent-verified@example.com')
    await obtainCode(s, verified, s256)
    const again = await s.get(
      authorizeUrl({ response_type: 'code', client_id: verified.clientId, redirect_uri: verified.redirectUri, ...s256 }),
    )
    expect(again.statusCode).toBe(302)
  })
})

describe('registering the kinds in the console', () => {
  it('issues no secret to a native or single-page app, and says why', async () => {
    const developer = await new BrowserSession(t.app).signUpAndLogIn('kinds-developer@example.com')
    await developer.get('/applications/new')
    for (const kind of ['native', 'spa'] as const) {
      const res = await developer.post('/applications', applicationForm({ kind, redirect_uris: 'https://kinds.example/cb' }))
      expect(res.statusCode).toBe(200)
      expect(textById(res.body, 'client-id')).toBeTruthy()
      expect(textById(res.body, 'client-secret')).toBeUndefined()
      expect(res.body).toContain('PKCE (code_challenge_method=S256)')
      const id = /href="\/applications\/([0-9a-f-]{36})\/edit"/.exec(res.body)![1]!
      const row = await t.db.selectFrom('applications').select(['kind', 'secret_hash']).where('id', '=', id).executeTakeFirstOrThrow()
      expect(row).toEqual({ kind, secret_hash: null })
      expect((await developer.get(`/applications/${id}/secret`)).statusCode).toBe(404)
    }
    const machine = await createApplicationViaConsole(developer, { kind: 'machine' })
    expect(textById(machine.res.body, 'client-secret')).toMatch(/\S{20,}/)
  })

  it("refuses a single-page app's private-use redirect URI and an unknown kind", async () => {
    const developer = await new BrowserSession(t.app).signUpAndLogIn('kinds-refused@example.com')
    await developer.get('/applications/new')
    const spaScheme = await developer.post('/applications', applicationForm({ kind: 'spa', redirect_uris: 'com.example.app:/cb' }))
    expect(spaScheme.statusCode).toBe(400)
    expect(spaScheme.body).toContain('must use https')
    const unknown = await developer.post('/applications', { ...applicationForm(), kind: 'robot' })
    expect(unknown.statusCode).toBe(400)
    expect(unknown.body).toContain('Choose web application, native app, single-page app or machine.')
  })

  it('is held by the database: a public kind with a secret, or a web application without one, is refused', async () => {
    await expect(t.db.updateTable('applications').set({ secret_hash: 'x' }).where('id', '=', native.id).execute()).rejects.toThrow(
      /applications_public_kinds_have_no_secret/,
    )
    await expect(t.db.updateTable('applications').set({ secret_hash: null }).where('id', '=', web.id).execute()).rejects.toThrow(
      /applications_public_kinds_have_no_secret/,
    )
  })
})

describe('changing the kind in the console', () => {
  async function register(developer: BrowserSession, kind: 'web' | 'native', redirect: string): Promise<{ id: string; clientId: string }> {
    await developer.get('/applications/new')
    const res = await developer.post('/applications', applicationForm({ kind, redirect_uris: redirect }))
    expect(res.statusCode).toBe(200)
    return { id: /href="\/applications\/([0-9a-f-]{36})\/edit"/.exec(res.body)![1]!, clientId: textById(res.body, 'client-id')! }
  }

  async function changeKind(developer: BrowserSession, id: string, kind: string) {
    const page = await developer.get(`/applications/${id}/kind`)
    expect(page.statusCode).toBe(200)
    return developer.post(`/applications/${id}/kind`, { kind })
  }

  const secretOf = async (id: string) =>
    (await t.db.selectFrom('applications').select(['kind', 'secret_hash']).where('id', '=', id).executeTakeFirstOrThrow()).secret_hash

  it('web to single-page: the secret is deleted, tokens stay, and it is audited; back to web: a new secret, shown once', async () => {
    const developer = await new BrowserSession(t.app).signUpAndLogIn('kind-changer@example.com')
    const app = await register(developer, 'web', 'https://changer.example/cb')
    const page = await developer.get(`/applications/${app.id}/kind`)
    expect(page.body).toContain('the client secret is deleted at once')

    const toSpa = await changeKind(developer, app.id, 'spa')
    expect(toSpa.statusCode).toBe(200)
    expect(toSpa.body).toContain('Kind changed to single-page app.')
    expect(textById(toSpa.body, 'client-secret')).toBeUndefined()
    expect(await secretOf(app.id)).toBeNull()

    const toWeb = await changeKind(developer, app.id, 'web')
    expect(toWeb.statusCode).toBe(200)
    const secret = textById(toWeb.body, 'client-secret')!
    expect(secret).toMatch(/\S{20,}/)
    expect(await secretOf(app.id)).toBe(sha256Hex(secret))

    const events = await t.db
      .selectFrom('audit_events')
      .select('detail')
      .where('event', '=', 'application.kind_changed')
      .where('client_id', '=', app.clientId)
      .orderBy('id')
      .execute()
    expect(events.map((e) => e.detail)).toEqual([
      'From web application to single-page app; the client secret was deleted (a public client has none)',
      'From single-page app to web application; a new client secret was generated',
    ])
  })

  it('refuses a single-page app with a private-use redirect URI, the same kind, and an unknown one', async () => {
    const developer = await new BrowserSession(t.app).signUpAndLogIn('kind-refused@example.com')
    const app = await register(developer, 'native', 'com.example.kinds:/cb')
    const toSpa = await changeKind(developer, app.id, 'spa')
    expect(toSpa.statusCode).toBe(400)
    expect(toSpa.body).toContain('must use https')
    expect((await changeKind(developer, app.id, 'native')).statusCode).toBe(400)
    expect((await changeKind(developer, app.id, 'robot')).statusCode).toBe(400)
    expect(await secretOf(app.id)).toBeNull()
    // Another owner's application is not found.
    const stranger = await new BrowserSession(t.app).signUpAndLogIn('kind-stranger@example.com')
    expect((await stranger.get(`/applications/${app.id}/kind`)).statusCode).toBe(404)
  })
})

describe('pushed authorization requests from a public client (RFC 9126)', () => {
  function push(fields: Record<string, string>) {
    const body = new URLSearchParams({
      client_id: native.clientId,
      response_type: 'code',
      scope: 'read',
      redirect_uri: LOOPBACK,
      ...fields,
    })
    return t.app.inject({
      method: 'POST',
      url: '/oauth/par',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: body.toString(),
    })
  }

  it('accepts client_id alone with an S256 challenge, and refuses it without one or with a secret', async () => {
    const ok = await push(s256)
    expect(ok.statusCode, ok.body).toBe(201)
    expect(ok.json().request_uri).toMatch(/^urn:ietf:params:oauth:request_uri:/)
    const noChallenge = await push({})
    expectOAuthError(noChallenge, 'invalid_request')
    expect(noChallenge.json().error_description).toMatch(/S256/)
    expectOAuthError(await push({ ...s256, client_secret: 'anything' }), 'invalid_client', 401)
  })
})
