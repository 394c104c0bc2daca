import { SignJWT, generateKeyPair } from 'jose'
import * as client from 'openid-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { type TestClient, authorizeUrl, consentFields, createClient, hiddenFields, returnLink } from '../oauth/helpers.js'
import { listenOnLoopback } from '../../helpers/loopback.js'

/*
 * OpenID Connect RP-Initiated Logout 1.0 (docs/openid-connect.md), with openid-client as the relying party: it
 * discovers end_session_endpoint, signs a user in with the code flow, and builds the sign-out URL
 * with buildEndSessionUrl. Also id_token_hint at /oauth/authorize (OpenID Connect Core 3.1.2.1).
 */

let t: TestContext
let issuer: URL
let app: TestClient
let other: TestClient
const REDIRECT = 'http://127.0.0.1:53682/callback'
const SIGNED_OUT = 'http://127.0.0.1:53682/signed-out'
const IDENTITY = ['openid', 'email', 'profile', 'read']

beforeAll(async () => {
  const listening = await listenOnLoopback((env) => buildTestApp({ ...env, LOGIN_RATE_LIMIT: '10000' }))
  t = listening.t
  issuer = new URL(listening.baseUrl)
  app = await createClient(t.db, { redirectUris: [REDIRECT], scopes: IDENTITY, requirePkce: true })
  other = await createClient(t.db, { redirectUris: [REDIRECT], scopes: IDENTITY, name: 'Other App' })
  for (const c of [app, other]) {
    await t.db
      .updateTable('applications')
      .set({ post_logout_redirect_uris: [SIGNED_OUT] })
      .where('id', '=', c.id)
      .execute()
  }
})
afterAll(async () => {
  await t.close()
})

async function relyingParty(of: TestClient = app): Promise<client.Configuration> {
  return client.discovery(issuer, of.clientId, of.clientSecret, undefined, { execute: [client.allowInsecureRequests] })
}

/** Signs the browser's user in to `app` with the code flow; the ID Token openid-client validated. */
async function signIn(browser: BrowserSession, config: client.Configuration): Promise<string> {
  const verifier = client.randomPKCECodeVerifier()
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    scope: 'openid email',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  })
  let res = await browser.get(url.pathname + url.search)
  if (res.statusCode === 200) res = await browser.post('/oauth/authorize', { ...consentFields(res.body), decision: 'approve' })
  expect(res.headers.location).toMatch(/^http:\/\/127\.0\.0\.1:53682\/callback\?code=/)
  const tokens = await client.authorizationCodeGrant(config, new URL(String(res.headers.location)), {
    pkceCodeVerifier: verifier,
    idTokenExpected: true,
  })
  return tokens.id_token!
}

/** A console page: 200 with a session, a redirect to the log-in page without one. */
async function loggedIn(browser: BrowserSession): Promise<boolean> {
  const res = await browser.get('/applications')
  if (res.statusCode === 200) return true
  expect(res.statusCode).toBe(303)
  expect(res.headers.location).toMatch(/^\/login/)
  return false
}

async function signedInUser(email: string): Promise<{ browser: BrowserSession; idToken: string; userId: string }> {
  const browser = await new BrowserSession(t.app).signUpAndLogIn(email)
  const idToken = await signIn(browser, await relyingParty())
  const row = await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()
  return { browser, idToken, userId: row.id }
}

const pathOf = (url: URL) => url.pathname + url.search

/** The confirmation form's fields, as the browser sends them back. */
const confirmationFields = (html: string) => hiddenFields(html, '/oauth/logout/confirm')

describe('the end_session_endpoint', () => {
  it('is in discovery, and signs the user out at once with a hint of this session, back to the registered URI with state', async () => {
    const config = await relyingParty()
    expect(config.serverMetadata().end_session_endpoint).toBe(`${issuer.origin}/oauth/logout`)
    const { browser, idToken, userId } = await signedInUser('logout-at-once@example.com')
    expect(await loggedIn(browser)).toBe(true)

    const url = client.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: SIGNED_OUT, state: 'st 1/2' })
    const res = await browser.get(pathOf(url))
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe(`${SIGNED_OUT}?state=st+1%2F2`)
    expect(await loggedIn(browser)).toBe(false)
    const events = await t.db
      .selectFrom('audit_events')
      .select(['event', 'client_id', 'detail'])
      .where('user_id', '=', userId)
      .where('event', '=', 'user.logged_out')
      .execute()
    expect(events).toEqual([
      {
        event: 'user.logged_out',
        client_id: app.clientId,
        detail: 'At the request of the application (OpenID Connect RP-Initiated Logout)',
      },
    ])
  })

  it('takes the same parameters as a form POST from the relying party’s own page', async () => {
    const { browser, idToken } = await signedInUser('logout-post@example.com')
    const res = await browser.post(
      '/oauth/logout',
      { _csrf: null, id_token_hint: idToken, post_logout_redirect_uri: SIGNED_OUT, state: 'posted' },
      { origin: 'http://127.0.0.1:53682', 'sec-fetch-site': 'same-site' },
    )
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe(`${SIGNED_OUT}?state=posted`)
    expect(await loggedIn(browser)).toBe(false)
  })

  it('shows "You are signed out" without a post_logout_redirect_uri', async () => {
    const { browser, idToken } = await signedInUser('logout-page@example.com')
    const res = await browser.get(pathOf(client.buildEndSessionUrl(await relyingParty(), { id_token_hint: idToken })))
    expect(res.statusCode).toBe(200)
    expect(res.headers.location).toBeUndefined()
    expect(res.body).toContain('<h1>You are signed out</h1>')
    expect(await loggedIn(browser)).toBe(false)
  })

  it('never redirects to a post_logout_redirect_uri the application did not register, and ends nothing', async () => {
    const { browser, idToken } = await signedInUser('logout-unregistered@example.com')
    const config = await relyingParty()
    for (const target of ['https://evil.example/bye', `${SIGNED_OUT}/more`, `${SIGNED_OUT}?x=1`, REDIRECT]) {
      const res = await browser.get(pathOf(client.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: target })))
      expect(res.statusCode, target).toBe(400)
      expect(res.headers.location).toBeUndefined()
      expect(res.body).toContain('is not one the application registered')
    }
    // With neither client_id nor a hint there is no application to have registered it.
    const bare = await browser.get(`/oauth/logout?${new URLSearchParams({ post_logout_redirect_uri: SIGNED_OUT })}`)
    expect(bare.statusCode).toBe(400)
    expect(bare.headers.location).toBeUndefined()
    expect(await loggedIn(browser)).toBe(true)
  })

  it('asks first when the hint is not of this session, and signs out when the person confirms', async () => {
    const { idToken } = await signedInUser('logout-confirm@example.com')
    // The same person, logged in again in another browser: another session, another sid.
    const browser = await new BrowserSession(t.app).signUpAndLogIn('logout-confirm@example.com')
    const url = client.buildEndSessionUrl(await relyingParty(), {
      id_token_hint: idToken,
      post_logout_redirect_uri: SIGNED_OUT,
      state: 'c',
    })
    const page = await browser.get(pathOf(url))
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('Sign out of Gatehouse?')
    expect(page.body).toContain('<strong>Team Planner</strong> asks to sign you out')
    expect(String(page.headers['content-security-policy'])).toContain("form-action 'self' http://127.0.0.1:53682")
    expect(await loggedIn(browser)).toBe(true)

    const fields = confirmationFields(page.body)
    expect(fields).toMatchObject({ id_token_hint: idToken, post_logout_redirect_uri: SIGNED_OUT, state: 'c' })
    // The confirmation is a form of Gatehouse's own: another site's POST is refused.
    const forged = await browser.post('/oauth/logout/confirm', fields, { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' })
    expect(forged.statusCode).toBe(403)
    const noToken = await browser.post('/oauth/logout/confirm', { ...fields, _csrf: 'wrong' })
    expect(noToken.statusCode).toBe(403)
    expect(await loggedIn(browser)).toBe(true)

    const confirmed = await browser.post('/oauth/logout/confirm', fields)
    expect(confirmed.statusCode).toBe(303)
    expect(confirmed.headers.location).toBe(`${SIGNED_OUT}?state=c`)
    expect(await loggedIn(browser)).toBe(false)
  })

  it('asks first without any hint, and then only links to the post-logout URI', async () => {
    const browser = await new BrowserSession(t.app).signUpAndLogIn('logout-no-hint@example.com')
    const page = await browser.get(
      `/oauth/logout?${new URLSearchParams({ client_id: app.clientId, post_logout_redirect_uri: SIGNED_OUT, state: 'n' })}`,
    )
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('Sign out of Gatehouse?')
    expect(page.body).toContain('Afterwards you can choose to return to <strong class="mono">127.0.0.1:53682</strong>')
    // No redirect follows the confirmation, so form-action need not allow the relying party.
    expect(String(page.headers['content-security-policy'])).not.toContain('127.0.0.1:53682')
    const confirmed = await browser.post('/oauth/logout/confirm', confirmationFields(page.body))
    expect(confirmed.statusCode).toBe(200)
    expect(confirmed.headers.location).toBeUndefined()
    expect(returnLink(confirmed.body)).toEqual({ href: `${SIGNED_OUT}?state=n`, text: 'Return to 127.0.0.1:53682' })
    expect(await loggedIn(browser)).toBe(false)
  })

  it('refuses a hint Gatehouse did not sign, and ends nothing', async () => {
    const { browser, idToken, userId } = await signedInUser('logout-forged@example.com')
    const claims = JSON.parse(Buffer.from(idToken.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>
    const { privateKey } = await generateKeyPair('RS256')
    const forged = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: JSON.parse(Buffer.from(idToken.split('.')[0]!, 'base64url').toString()).kid })
      .sign(privateKey)
    expect(claims.sub).toBe(userId)
    const res = await browser.get(`/oauth/logout?${new URLSearchParams({ id_token_hint: forged, post_logout_redirect_uri: SIGNED_OUT })}`)
    expect(res.statusCode).toBe(400)
    expect(res.headers.location).toBeUndefined()
    expect(res.body).toContain('is not an ID Token this server issued')
    // Tampered claims under Gatehouse's own signature are refused the same way.
    const [h, , s] = idToken.split('.')
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: 'someone-else' })).toString('base64url')}.${s}`
    expect((await browser.get(`/oauth/logout?${new URLSearchParams({ id_token_hint: tampered })}`)).statusCode).toBe(400)
    expect(await loggedIn(browser)).toBe(true)
  })

  it('accepts an expired hint Gatehouse signed (RP-Initiated Logout 1.0 2)', async () => {
    const { browser, idToken } = await signedInUser('logout-expired@example.com')
    const { exp } = JSON.parse(Buffer.from(idToken.split('.')[1]!, 'base64url').toString()) as { exp: number }
    t.clock.advance(2 * 3600_000)
    expect(t.clock().getTime() / 1000).toBeGreaterThan(exp)
    const res = await browser.get(
      pathOf(client.buildEndSessionUrl(await relyingParty(), { id_token_hint: idToken, post_logout_redirect_uri: SIGNED_OUT })),
    )
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe(SIGNED_OUT)
    expect(await loggedIn(browser)).toBe(false)
  })

  it('refuses a client_id that is not the hint’s audience, and ends nothing', async () => {
    const { browser, idToken } = await signedInUser('logout-aud@example.com')
    const url = client.buildEndSessionUrl(await relyingParty(other), { id_token_hint: idToken, post_logout_redirect_uri: SIGNED_OUT })
    expect(url.searchParams.get('client_id')).toBe(other.clientId)
    const res = await browser.get(pathOf(url))
    expect(res.statusCode).toBe(400)
    expect(res.headers.location).toBeUndefined()
    expect(res.body).toContain('The client_id is not the application the id_token_hint was issued to.')
    expect(await loggedIn(browser)).toBe(true)
  })

  it('with no one logged in, links to the registered URI of an unverified application, and returns to a verified one', async () => {
    const { idToken } = await signedInUser('logout-nobody@example.com')
    const url = pathOf(
      client.buildEndSessionUrl(await relyingParty(), { id_token_hint: idToken, post_logout_redirect_uri: SIGNED_OUT, state: 's' }),
    )
    // The hint is genuine, but no session shows whose browser this is: anyone can send their own.
    const page = await new BrowserSession(t.app).get(url)
    expect(page.statusCode).toBe(200)
    expect(page.headers.location).toBeUndefined()
    expect(page.body).toContain('<h1>You are signed out</h1>')
    expect(returnLink(page.body)).toEqual({ href: `${SIGNED_OUT}?state=s`, text: 'Return to 127.0.0.1:53682' })

    await t.db.updateTable('applications').set({ verified_at: t.clock() }).where('id', '=', app.id).execute()
    try {
      const res = await new BrowserSession(t.app).get(url)
      expect(res.statusCode).toBe(303)
      expect(res.headers.location).toBe(`${SIGNED_OUT}?state=s`)
    } finally {
      await t.db.updateTable('applications').set({ verified_at: null }).where('id', '=', app.id).execute()
    }
  })
})

describe('the end_session_endpoint is no open redirector (RP-Initiated Logout 1.0 3, docs/decisions/005-trusted-redirects.md)', () => {
  const PHISH = 'https://phish.example/landing'

  /** A throwaway application anyone could register, with its own post-logout URI and the code flow. */
  async function throwaway(): Promise<TestClient> {
    const made = await createClient(t.db, { redirectUris: [REDIRECT], scopes: IDENTITY, name: 'Throwaway' })
    await t.db
      .updateTable('applications')
      .set({ post_logout_redirect_uris: [PHISH] })
      .where('id', '=', made.id)
      .execute()
    return made
  }

  it('sends nobody to an unverified application’s URI on client_id alone: the page names the host', async () => {
    const evil = await throwaway()
    const query = new URLSearchParams({ client_id: evil.clientId, post_logout_redirect_uri: PHISH, state: 'x' })
    const anonymous = await new BrowserSession(t.app).get(`/oauth/logout?${query}`)
    expect(anonymous.statusCode).toBe(200)
    expect(anonymous.headers.location).toBeUndefined()
    expect(returnLink(anonymous.body)).toEqual({ href: `${PHISH}?state=x`, text: 'Return to phish.example' })

    const browser = await new BrowserSession(t.app).signUpAndLogIn('throwaway-victim@example.com')
    const page = await browser.get(`/oauth/logout?${query}`)
    expect(page.body).toContain('Sign out of Gatehouse?')
    const confirmed = await browser.post('/oauth/logout/confirm', confirmationFields(page.body))
    expect(confirmed.statusCode).toBe(200)
    expect(confirmed.headers.location).toBeUndefined()
    expect(returnLink(confirmed.body)?.href).toBe(`${PHISH}?state=x`)
  })

  it('does not trust the attacker’s own hint, expired or not, for another person’s browser or none', async () => {
    const evil = await throwaway()
    // The attacker signs in to their own application and keeps its ID Token.
    const attacker = await new BrowserSession(t.app).signUpAndLogIn('throwaway-attacker@example.com')
    const hint = await signIn(attacker, await relyingParty(evil))
    t.clock.advance(2 * 3600_000)
    const url = `/oauth/logout?${new URLSearchParams({ id_token_hint: hint, post_logout_redirect_uri: PHISH })}`

    const anonymous = await new BrowserSession(t.app).get(url)
    expect(anonymous.statusCode).toBe(200)
    expect(anonymous.headers.location).toBeUndefined()
    expect(returnLink(anonymous.body)?.href).toBe(PHISH)

    const victim = await new BrowserSession(t.app).signUpAndLogIn('hinted-victim@example.com')
    const page = await victim.get(url)
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('Sign out of Gatehouse?')
    expect(await loggedIn(victim)).toBe(true)
    const confirmed = await victim.post('/oauth/logout/confirm', confirmationFields(page.body))
    expect(confirmed.statusCode).toBe(200)
    expect(confirmed.headers.location).toBeUndefined()
    expect(returnLink(confirmed.body)?.href).toBe(PHISH)
  })

  it('does not trust a hint of the browser’s own user for an application they never granted access', async () => {
    const evil = await throwaway()
    const { browser, userId } = await signedInUser('hint-no-grant@example.com')
    const hint = await signIn(browser, await relyingParty(evil))
    await t.db.deleteFrom('grants').where('user_id', '=', userId).where('application_id', '=', evil.id).execute()
    const res = await browser.get(`/oauth/logout?${new URLSearchParams({ id_token_hint: hint, post_logout_redirect_uri: PHISH })}`)
    expect(res.statusCode).toBe(200)
    expect(res.headers.location).toBeUndefined()
    expect(returnLink(res.body)?.href).toBe(PHISH)
    expect(await loggedIn(browser)).toBe(false)
  })
})

describe('id_token_hint at /oauth/authorize (OpenID Connect Core 3.1.2.1)', () => {
  const silent = (idTokenHint: string, extra: Record<string, string> = {}) =>
    authorizeUrl({
      client_id: other.clientId,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid',
      state: 'st',
      id_token_hint: idTokenHint,
      ...extra,
    })

  it('answers prompt=none with a code for the hint’s own user, and login_required for another', async () => {
    const a = await signedInUser('hint-a@example.com')
    const b = await new BrowserSession(t.app).signUpAndLogIn('hint-b@example.com')
    // Both granted `other` once, so its error responses are redirected (docs/decisions/005-trusted-redirects.md).
    const aHint = await signIn(a.browser, await relyingParty(other))
    await signIn(b, await relyingParty(other))

    const own = await a.browser.get(silent(aHint, { prompt: 'none' }))
    expect(own.statusCode).toBe(302)
    expect(new URL(String(own.headers.location)).searchParams.get('code')).toBeTruthy()

    const foreign = await b.get(silent(aHint, { prompt: 'none' }))
    expect(foreign.statusCode).toBe(302)
    const params = new URL(String(foreign.headers.location)).searchParams
    expect(params.get('error')).toBe('login_required')
    expect(params.get('state')).toBe('st')

    // Without prompt=none, the user is asked to log in again, as with prompt=login.
    const relogin = await b.get(silent(aHint))
    expect(relogin.statusCode).toBe(303)
    expect(String(relogin.headers.location)).toMatch(/^\/login\?next=.*&fresh=1$/)
  })

  it('answers invalid_request for a hint Gatehouse did not sign or did not issue to this client', async () => {
    const { browser, idToken } = await signedInUser('hint-invalid@example.com')
    await signIn(browser, await relyingParty(other))
    const claims = JSON.parse(Buffer.from(idToken.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>
    const { privateKey } = await generateKeyPair('RS256')
    const forged = await new SignJWT({ ...claims, aud: other.clientId }).setProtectedHeader({ alg: 'RS256' }).sign(privateKey)
    // idToken was issued to `app`, not `other`.
    for (const hint of [forged, idToken, 'not-a-jwt']) {
      const res = await browser.get(silent(hint, { prompt: 'none' }))
      expect(res.statusCode).toBe(302)
      expect(new URL(String(res.headers.location)).searchParams.get('error')).toBe('invalid_request')
    }
  })
})
