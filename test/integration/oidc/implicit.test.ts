import { createHash } from 'node:crypto'
import type { LightMyRequestResponse } from 'fastify'
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose'
import * as client from 'openid-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { type TestClient, authorizeUrl, consentFields, createClient, grantAccess, returnLink } from '../oauth/helpers.js'
import { listenOnLoopback } from '../../helpers/loopback.js'

/*
 * OpenID Connect's implicit flow (OpenID Connect Core 3.2, docs/openid-connect.md): response_type id_token,
 * validated by openid-client as a relying party nobody here wrote, and id_token token, whose ID
 * Token is verified with jose against the JWKS and whose at_hash is computed here (3.2.2.10).
 * The user's part (log-in, Authorize) is played through HTTP with the session cookie.
 */

let t: TestContext
let issuer: URL
let implicit: TestClient
let codeOnly: TestClient
const REDIRECT = 'http://127.0.0.1:53682/callback'

beforeAll(async () => {
  const listening = await listenOnLoopback((env) => buildTestApp({ ...env, LOGIN_RATE_LIMIT: '10000' }))
  t = listening.t
  issuer = new URL(listening.baseUrl)
  const scopes = ['openid', 'email', 'profile', 'read']
  implicit = await createClient(t.db, { redirectUris: [REDIRECT], scopes, allowImplicit: true })
  codeOnly = await createClient(t.db, { redirectUris: [REDIRECT], scopes })
})
afterAll(async () => {
  await t.close()
})

async function relyingParty(): Promise<client.Configuration> {
  const config = await client.discovery(issuer, implicit.clientId, implicit.clientSecret, undefined, {
    execute: [client.allowInsecureRequests],
  })
  client.useIdTokenResponseType(config)
  return config
}

/** Consent, then the response the browser is sent: a redirect, or a form_post page. */
async function approve(browser: BrowserSession, url: string): Promise<LightMyRequestResponse> {
  const page = await browser.get(url)
  expect(page.statusCode, page.body.slice(0, 300)).toBe(200)
  expect(page.body).toContain('name="request_id"')
  return browser.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
}

function fragmentOf(res: LightMyRequestResponse): URLSearchParams {
  expect([302, 303], res.body.slice(0, 300)).toContain(res.statusCode)
  const location = new URL(String(res.headers.location))
  expect(location.search).toBe('')
  return new URLSearchParams(location.hash.slice(1))
}

const userId = async (email: string) =>
  (await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()).id

const request = (extra: Record<string, string | undefined>) =>
  authorizeUrl({ client_id: implicit.clientId, redirect_uri: REDIRECT, scope: 'openid', state: 'st', nonce: 'n-0S6_WzA2Mj', ...extra })

describe('response_type=id_token', () => {
  it('signs a user in through openid-client: ID Token and state in the fragment, no access token', async () => {
    const config = await relyingParty()
    const nonce = client.randomNonce()
    const state = client.randomState()
    const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid email profile', nonce, state })
    expect(url.searchParams.get('response_type')).toBe('id_token')
    const browser = await new BrowserSession(t.app).signUpAndLogIn('implicit-id@example.com', undefined, { verify: false })
    const params = fragmentOf(await approve(browser, url.pathname + url.search))
    expect([...params.keys()].sort()).toEqual(['id_token', 'iss', 'state'])

    const callback = new URL(REDIRECT)
    callback.hash = params.toString()
    const claims = await client.implicitAuthentication(config, callback, nonce, { expectedState: state })
    const user = await t.db
      .selectFrom('users')
      .select(['id', 'profile_updated_at'])
      .where('email', '=', 'implicit-id@example.com')
      .executeTakeFirstOrThrow()
    expect(claims).toMatchObject({ iss: issuer.origin, sub: user.id, aud: implicit.clientId, nonce, amr: ['pwd'] })
    expect(claims.exp - claims.iat).toBe(3600)
    expect(typeof claims.auth_time).toBe('number')
    expect(claims.sid).toMatch(/^[0-9a-f]{32}$/)
    expect(claims).not.toHaveProperty('at_hash')
    // No access token, so no UserInfo to ask: the email and profile claims are in the ID Token
    // (OpenID Connect Core 5.4), email_verified false for an address never proven.
    expect(claims).toMatchObject({
      email: 'implicit-id@example.com',
      email_verified: false,
      updated_at: Math.floor(user.profile_updated_at.getTime() / 1000),
    })
    expect(await t.db.selectFrom('access_tokens').select('token_hash').where('user_id', '=', user.id).execute()).toEqual([])
    const events = await t.db
      .selectFrom('audit_events')
      .select('detail')
      .where('event', '=', 'grant.given')
      .where('user_id', '=', user.id)
      .execute()
    expect(events.map((e) => e.detail)).toEqual(['Scopes: openid email profile; ID Token (implicit flow) issued'])
  })

  it('works with response_mode=form_post: the page posts id_token, state and iss', async () => {
    const config = await relyingParty()
    const nonce = client.randomNonce()
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid',
      nonce,
      state: 'fp',
      response_mode: 'form_post',
    })
    const browser = await new BrowserSession(t.app).signUpAndLogIn('implicit-form@example.com')
    const res = await approve(browser, url.pathname + url.search)
    expect(res.statusCode).toBe(200)
    expect(res.headers['cache-control']).toBe('no-store')
    const form = /<form id="response-form" method="post" action="([^"]*)">([\s\S]*?)<\/form>/.exec(res.body)
    expect(form?.[1]).toBe(REDIRECT)
    const fields = new URLSearchParams()
    for (const m of form![2]!.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) fields.append(m[1]!, m[2]!)
    expect([...fields.keys()].sort()).toEqual(['id_token', 'iss', 'state'])
    // As openid-client documents for form_post: the posted body as the URL's fragment.
    const callback = new URL(REDIRECT)
    callback.hash = fields.toString()
    const claims = await client.implicitAuthentication(config, callback, nonce, { expectedState: 'fp' })
    expect(claims.sub).toBe(await userId('implicit-form@example.com'))
  })

  it('always asks for consent, and prompt=none answers consent_required, as the token flow does', async () => {
    const browser = await new BrowserSession(t.app).signUpAndLogIn('implicit-again@example.com')
    fragmentOf(await approve(browser, request({ response_type: 'id_token' })))
    // Granted once: the page again (no remembered consent in the browser flows, RFC 8252 8.6).
    const again = await browser.get(request({ response_type: 'id_token' }))
    expect(again.statusCode).toBe(200)
    expect(again.body).toContain('name="request_id"')
    const silent = fragmentOf(await browser.get(request({ response_type: 'id_token', prompt: 'none' })))
    expect(silent.get('error')).toBe('consent_required')
    expect(silent.get('state')).toBe('st')
    // Not logged in, without a grant: the error is shown, not sent (docs/decisions/005-trusted-redirects.md).
    const anonymous = await t.app.inject(request({ response_type: 'id_token', prompt: 'none' }))
    expect(anonymous.statusCode).toBe(400)
    expect(returnLink(anonymous.body)?.href).toContain('#error=login_required')
  })
})

describe('response_type=id_token token', () => {
  it('answers access token, token type, scope, state and an ID Token whose at_hash matches, with each algorithm', async () => {
    const browser = await new BrowserSession(t.app).signUpAndLogIn('implicit-both@example.com')
    const sub = await userId('implicit-both@example.com')
    for (const alg of ['RS256', 'ES256', 'EdDSA'] as const) {
      await t.db.updateTable('applications').set({ id_token_alg: alg }).where('id', '=', implicit.id).execute()
      const nonce = `nonce-${alg}`
      // The order of the values does not matter (RFC 6749 3.1.1).
      const responseType = alg === 'ES256' ? 'token id_token' : 'id_token token'
      const params = fragmentOf(await approve(browser, request({ response_type: responseType, scope: 'openid email read', nonce })))
      expect([...params.keys()].sort()).toEqual(['access_token', 'id_token', 'iss', 'scope', 'state', 'token_type'])
      expect(params.get('token_type')).toBe('Bearer')
      expect(params.get('scope')).toBe('openid email read')
      expect(params.get('state')).toBe('st')
      expect(params.get('iss')).toBe(issuer.origin)

      const idToken = params.get('id_token')!
      // Fetched afresh: the key of an algorithm first used just now is new to a cached set.
      const jwks = createRemoteJWKSet(new URL('/.well-known/jwks.json', issuer))
      expect(decodeProtectedHeader(idToken).alg).toBe(alg)
      const { payload } = await jwtVerify(idToken, jwks, { issuer: issuer.origin, audience: implicit.clientId, algorithms: [alg] })
      expect(payload).toMatchObject({ sub, nonce, amr: ['pwd'], auth_time: expect.any(Number), sid: expect.any(String) })
      // With an access token the identity claims come from UserInfo (OpenID Connect Core 5.4).
      expect(payload).not.toHaveProperty('email')
      // OpenID Connect Core 3.2.2.10: the left half of the hash of the token's ASCII octets, with
      // the algorithm's hash; SHA-512 for Ed25519.
      const digest = createHash(alg === 'EdDSA' ? 'sha512' : 'sha256')
        .update(params.get('access_token')!, 'ascii')
        .digest()
      expect(payload.at_hash).toBe(digest.subarray(0, digest.length / 2).toString('base64url'))

      const info = await t.app.inject({
        method: 'GET',
        url: '/oauth/userinfo',
        headers: { authorization: `Bearer ${params.get('access_token')}` },
      })
      expect(info.json()).toEqual({ sub, email: 'implicit-both@example.com', email_verified: true })
    }
    await t.db.updateTable('applications').set({ id_token_alg: 'RS256' }).where('id', '=', implicit.id).execute()
    const events = await t.db
      .selectFrom('audit_events')
      .select('detail')
      .where('event', '=', 'grant.given')
      .where('user_id', '=', sub)
      .execute()
    expect(events.map((e) => e.detail)).toContain('Scopes: openid email read; access token and ID Token (implicit flow) issued')
  })
})

describe('refusals', () => {
  it('without a nonce: invalid_request, in the fragment to a trusted client, on a page otherwise', async () => {
    const browser = await new BrowserSession(t.app).signUpAndLogIn('implicit-nonce@example.com')
    for (const responseType of ['id_token', 'id_token token']) {
      const untrusted = await browser.get(request({ response_type: responseType, nonce: undefined }))
      expect(untrusted.statusCode).toBe(400)
      expect(untrusted.body).toContain(`response_type=${responseType} requires a nonce`)
      expect(returnLink(untrusted.body)?.href).toMatch(/^http:\/\/127\.0\.0\.1:53682\/callback#error=invalid_request&/)
    }
    await grantAccess(t.db, 'implicit-nonce@example.com', implicit.id)
    const trusted = fragmentOf(await browser.get(request({ response_type: 'id_token', nonce: undefined })))
    expect(trusted.get('error')).toBe('invalid_request')
    expect(trusted.get('error_description')).toBe('response_type=id_token requires a nonce')
    expect(trusted.get('state')).toBe('st')
    expect(trusted.get('iss')).toBe(issuer.origin)
    const empty = fragmentOf(await browser.get(request({ response_type: 'id_token', nonce: '' })))
    expect(empty.get('error')).toBe('invalid_request')
  })

  it('answers the other refusals in the fragment: no openid scope, token flow not allowed, hybrid types, query mode', async () => {
    const browser = await new BrowserSession(t.app).signUpAndLogIn('implicit-refused@example.com')
    await grantAccess(t.db, 'implicit-refused@example.com', implicit.id)
    await grantAccess(t.db, 'implicit-refused@example.com', codeOnly.id)
    const cases: Array<[Record<string, string>, string, string]> = [
      [{ response_type: 'id_token', scope: 'read' }, 'invalid_request', 'response_type=id_token requires the scope openid'],
      [
        { response_type: 'id_token', client_id: codeOnly.clientId },
        'unauthorized_client',
        'This application may not use response_type=id_token',
      ],
      [
        { response_type: 'token id_token', client_id: codeOnly.clientId },
        'unauthorized_client',
        'This application may not use response_type=id_token token',
      ],
      [{ response_type: 'code id_token' }, 'unsupported_response_type', 'Hybrid response types are not offered'],
      [{ response_type: 'id_token code' }, 'unsupported_response_type', 'Hybrid response types are not offered'],
      [{ response_type: 'code token' }, 'unsupported_response_type', 'Hybrid response types are not offered'],
      [{ response_type: 'code id_token token' }, 'unsupported_response_type', 'Hybrid response types are not offered'],
      [{ response_type: 'id_token id_token' }, 'unsupported_response_type', 'response_type must be'],
      [
        { response_type: 'id_token', response_mode: 'query' },
        'invalid_request',
        'response_mode=query is not allowed with response_type=id_token',
      ],
      [{ response_type: 'id_token token', response_mode: 'query' }, 'invalid_request', 'response_mode=query is not allowed'],
    ]
    for (const [extra, error, description] of cases) {
      const params = fragmentOf(await browser.get(request(extra)))
      expect(params.get('error'), JSON.stringify(extra)).toBe(error)
      expect(params.get('error_description')).toContain(description)
      expect(params.get('state')).toBe('st')
    }
  })
})

describe('UserInfo with the access token in a form body (RFC 6750 2.2)', () => {
  it('answers the claims, and refuses the token sent two ways at once or repeated', async () => {
    const browser = await new BrowserSession(t.app).signUpAndLogIn('implicit-form-body@example.com')
    const params = fragmentOf(await approve(browser, request({ response_type: 'id_token token' })))
    const token = params.get('access_token')!
    const form = { 'content-type': 'application/x-www-form-urlencoded' }
    const post = (payload: string, headers: Record<string, string> = {}) =>
      t.app.inject({ method: 'POST', url: '/oauth/userinfo', headers: { ...form, ...headers }, payload })

    const ok = await post(new URLSearchParams({ access_token: token }).toString())
    expect(ok.statusCode).toBe(200)
    expect(ok.json()).toEqual({ sub: await userId('implicit-form-body@example.com') })

    const both = await post(new URLSearchParams({ access_token: token }).toString(), { authorization: `Bearer ${token}` })
    expect(both.statusCode).toBe(400)
    expect(both.json()).toMatchObject({ error: 'invalid_request' })
    expect(both.headers['www-authenticate']).toMatch(/^Bearer realm="gatehouse", error="invalid_request", error_description="[^"]+"$/)

    const repeated = await post(`access_token=${token}&access_token=${token}`)
    expect(repeated.statusCode).toBe(400)
    expect(repeated.json()).toMatchObject({ error: 'invalid_request' })

    const unknown = await post('access_token=gat_nothing')
    expect(unknown.statusCode).toBe(401)
    expect(unknown.headers['www-authenticate']).toContain('error="invalid_token"')
    // The query is never read (RFC 6750 2.3 is not supported): no token at all.
    const inQuery = await t.app.inject({ method: 'GET', url: `/oauth/userinfo?access_token=${token}` })
    expect(inQuery.statusCode).toBe(401)
    expect(inQuery.headers['www-authenticate']).toBe(
      'Bearer realm="gatehouse", DPoP algs="ES256 ES384 ES512 EdDSA Ed25519 PS256 PS384 PS512 RS256 RS384 RS512"',
    )
  })
})
