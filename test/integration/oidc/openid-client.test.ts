import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose'
import * as client from 'openid-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { basicAuth, createTokenSetup } from '../../helpers/factories.js'
import { type TestClient, authorizeUrl, createClient } from '../oauth/helpers.js'
import { listenOnLoopback } from '../../helpers/loopback.js'
import { signInWithOpenIdClient } from '../../helpers/oidc-sign-in.js'

/*
 * Gatehouse as an OpenID Provider (docs/openid-connect.md), seen by a relying party nobody here wrote:
 * openid-client runs discovery, the code flow with PKCE and a nonce, validates the ID Token and
 * calls UserInfo against a listening server; the ID Token is verified again with jose against
 * the JWKS. Only the user's part (log-in, Authorize) is played through HTTP with the session cookie.
 */

let t: TestContext
let issuer: URL
let app: TestClient
const REDIRECT = 'http://127.0.0.1:53682/callback'
const IDENTITY = ['openid', 'email', 'profile', 'read']

beforeAll(async () => {
  const listening = await listenOnLoopback(buildTestApp)
  t = listening.t
  issuer = new URL(listening.baseUrl)
  app = await createClient(t.db, { redirectUris: [REDIRECT], scopes: IDENTITY, requirePkce: true })
})
afterAll(async () => {
  await t.close()
})

async function relyingParty(): Promise<client.Configuration> {
  return client.discovery(issuer, app.clientId, app.clientSecret, undefined, { execute: [client.allowInsecureRequests] })
}

describe('an openid-client relying party', () => {
  it('discovers Gatehouse, signs a user in with code + PKCE + nonce, and reads UserInfo', async () => {
    const config = await relyingParty()
    const metadata = config.serverMetadata()
    expect(metadata).toMatchObject({
      issuer: issuer.origin,
      jwks_uri: `${issuer.origin}/.well-known/jwks.json`,
      userinfo_endpoint: `${issuer.origin}/oauth/userinfo`,
      subject_types_supported: ['public'],
      response_types_supported: ['code', 'token', 'id_token', 'id_token token'],
    })
    expect(metadata.scopes_supported).toEqual(expect.arrayContaining(['openid', 'email', 'profile']))
    expect(metadata.id_token_signing_alg_values_supported).toContain('RS256')

    // Signed up and not verified: email_verified must say false.
    const browser = await new BrowserSession(t.app).signUpAndLogIn('rp-user@example.com', undefined, { verify: false })
    const { tokens, nonce } = await signInWithOpenIdClient(config, browser, {
      redirectUri: REDIRECT,
      scope: 'openid email profile',
      withState: true,
    })

    const user = await t.db
      .selectFrom('users')
      .select(['id', 'profile_updated_at'])
      .where('email', '=', 'rp-user@example.com')
      .executeTakeFirstOrThrow()
    const claims = tokens.claims()!
    expect(claims).toMatchObject({ iss: issuer.origin, sub: user.id, aud: app.clientId, nonce, amr: ['pwd'] })
    expect(claims.exp - claims.iat).toBe(3600)
    expect(typeof claims.auth_time).toBe('number')
    expect(claims.sid).toMatch(/^[0-9a-f]{32}$/)
    expect(claims.at_hash).toEqual(expect.any(String))

    // The same ID Token verified with jose against the published JWKS.
    const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri!))
    const verified = await jwtVerify(tokens.id_token!, jwks, { issuer: issuer.origin, audience: app.clientId })
    expect(verified.payload.sub).toBe(user.id)
    expect(decodeProtectedHeader(tokens.id_token!).alg).toBe('RS256')

    const info = await client.fetchUserInfo(config, tokens.access_token, user.id)
    expect(info).toEqual({
      sub: user.id,
      email: 'rp-user@example.com',
      email_verified: false,
      updated_at: Math.floor(user.profile_updated_at.getTime() / 1000),
    })
  })

  it('signs with ES256 or EdDSA when the application chose it in the console', async () => {
    const config = await relyingParty()
    // One user: the first sign-in asks for consent, the second is answered under remembered
    // consent (one statement), which must carry the nonce and the session's claims as well.
    const browser = await new BrowserSession(t.app).signUpAndLogIn('rp-algorithms@example.com')
    for (const alg of ['ES256', 'EdDSA'] as const) {
      await t.db.updateTable('applications').set({ id_token_alg: alg }).where('id', '=', app.id).execute()
      const { tokens, nonce } = await signInWithOpenIdClient(config, browser, { redirectUri: REDIRECT, scope: 'openid' })
      expect(decodeProtectedHeader(tokens.id_token!).alg).toBe(alg)
      expect(tokens.claims()).toMatchObject({ nonce, amr: ['pwd'], sid: expect.any(String), auth_time: expect.any(Number) })
      const jwks = createRemoteJWKSet(new URL('/.well-known/jwks.json', issuer))
      await jwtVerify(tokens.id_token!, jwks, { issuer: issuer.origin, audience: app.clientId, algorithms: [alg] })
    }
    await t.db.updateTable('applications').set({ id_token_alg: 'RS256' }).where('id', '=', app.id).execute()
  })

  it('states the display name the user set on the Account page as name, with updated_at', async () => {
    const browser = await new BrowserSession(t.app).signUpAndLogIn('named@example.com')
    const user = await t.db.selectFrom('users').select('id').where('email', '=', 'named@example.com').executeTakeFirstOrThrow()
    const { token } = await createTokenSetup(t.db, ['openid', 'profile'])
    await t.db.updateTable('access_tokens').set({ user_id: user.id }).where('token_hash', '=', token.digest).execute()
    const bearer = { authorization: `Bearer ${token.token}` }

    expect((await browser.get('/account')).body).toContain('id="display_name"')
    for (const refused of ['x'.repeat(101), 'Ann\u0007']) {
      const res = await browser.post('/account/profile', { display_name: refused })
      expect(res.statusCode).toBe(400)
      expect(res.body).toContain('id="display_name-error"')
    }
    t.clock.advance(5000)
    const saved = await browser.post('/account/profile', { display_name: '  Ann Example ' })
    expect(saved.statusCode).toBe(303)
    const info = (await t.app.inject({ method: 'GET', url: '/oauth/userinfo', headers: bearer })).json() as Record<string, unknown>
    expect(info).toEqual({ sub: user.id, name: 'Ann Example', updated_at: Math.floor(t.clock().getTime() / 1000) })
    expect((await browser.get('/account')).body).toContain('value="Ann Example"')
    const events = await t.db.selectFrom('audit_events').select('event').where('user_id', '=', user.id).execute()
    expect(events.map((e) => e.event)).toContain('user.display_name_changed')

    // Emptied: no name claim any more.
    await browser.post('/account/profile', { display_name: '' })
    expect((await t.app.inject({ method: 'GET', url: '/oauth/userinfo', headers: bearer })).json()).not.toHaveProperty('name')
  })

  it('serves discovery, the JWKS and UserInfo to no unregistered origin, and nothing private in the JWKS', async () => {
    for (const path of ['/.well-known/openid-configuration', '/.well-known/jwks.json', '/oauth/userinfo']) {
      const res = await fetch(new URL(path, issuer), { headers: { origin: 'https://unregistered.example' } })
      expect(res.headers.get('access-control-allow-origin')).toBeNull()
    }
    const jwks = (await (await fetch(new URL('/.well-known/jwks.json', issuer))).json()) as { keys: Record<string, unknown>[] }
    for (const key of jwks.keys) {
      expect(key).toMatchObject({
        kid: expect.any(String),
        kty: expect.any(String),
        use: 'sig',
        alg: expect.stringMatching(/^(RS256|ES256|EdDSA)$/),
      })
      for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(key).not.toHaveProperty(member)
    }
    const res = await fetch(new URL('/.well-known/jwks.json', issuer))
    expect(res.headers.get('cache-control')).toBe('public, max-age=300')
    // The token endpoint is not opened to other origins.
    expect(
      (await fetch(new URL('/oauth/token', issuer), { method: 'POST', body: '' })).headers.get('access-control-allow-origin'),
    ).toBeNull()
  })

  it('answers UserInfo with RFC 6750 errors: no token, a token without openid, a revoked token', async () => {
    const none = await t.app.inject({ method: 'GET', url: '/oauth/userinfo' })
    expect(none.statusCode).toBe(401)
    expect(none.headers['www-authenticate']).toMatch(/^Bearer realm="gatehouse", DPoP algs="[^"]+"$/)

    const withoutOpenid = await createTokenSetup(t.db, ['read', 'email'])
    const forbidden = await t.app.inject({
      method: 'GET',
      url: '/oauth/userinfo',
      headers: { authorization: `Bearer ${withoutOpenid.token.token}` },
    })
    expect(forbidden.statusCode).toBe(403)
    expect(forbidden.headers['www-authenticate']).toContain('error="insufficient_scope"')
    expect(forbidden.headers['www-authenticate']).toContain('scope="openid"')

    const { token, application } = await createTokenSetup(t.db, ['openid'])
    const bearer = { authorization: `Bearer ${token.token}` }
    expect((await t.app.inject({ method: 'GET', url: '/oauth/userinfo', headers: bearer })).json()).toEqual({ sub: token.userId })
    // Revoked by its client: refused at once, although the answer above was cached.
    const revoked = await t.app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      headers: {
        authorization: basicAuth(application.clientId, application.clientSecret),
        'content-type': 'application/x-www-form-urlencoded',
      },
      payload: `token=${token.token}`,
    })
    expect(revoked.statusCode).toBe(200)
    const after = await t.app.inject({ method: 'GET', url: '/oauth/userinfo', headers: bearer })
    expect(after.statusCode).toBe(401)
    expect(after.headers['www-authenticate']).toContain('error="invalid_token"')

    const unknown = await t.app.inject({
      method: 'POST',
      url: '/oauth/userinfo',
      headers: { authorization: 'Bearer gat_nothing', 'content-length': '0' },
    })
    expect(unknown.statusCode).toBe(401)
    expect(unknown.headers['www-authenticate']).toContain('error="invalid_token"')
  })

  it('refuses a nonce longer than 512 characters, and identity scopes the owner unchecked', async () => {
    const browser = await new BrowserSession(t.app).signUpAndLogIn('nonce@example.com')
    const base = {
      client_id: app.clientId,
      redirect_uri: REDIRECT,
      response_type: 'code',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    }
    // Neither application is verified nor granted: the error is shown, not redirected (decision 005).
    const long = await browser.get(authorizeUrl({ ...base, scope: 'openid', nonce: 'n'.repeat(513) }))
    expect(long.statusCode).toBe(400)
    expect(long.body).toContain('nonce must be at most 512 characters')

    const plain = await createClient(t.db, { redirectUris: [REDIRECT], scopes: ['read'] })
    const refused = await browser.get(authorizeUrl({ ...base, client_id: plain.clientId, scope: 'openid read' }))
    expect(refused.statusCode).toBe(400)
    expect(refused.body).toContain('This application may not request the scope openid')
  })
})
