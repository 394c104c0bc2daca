import * as oauth from 'oauth4webapi'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { type TestClient, buildOAuthTestApp, consentFields, createClient, tokenRow } from './helpers.js'
import { listenOnLoopback } from '../../helpers/loopback.js'

/*
 * A client nobody here wrote: oauth4webapi runs discovery, the code flow with PKCE and state,
 * the exchange and the revocation against a listening server. Only the user's part (log-in,
 * Authorize) is played through HTTP with the session cookie.
 */
let t: TestContext
let issuer: URL
let client: TestClient

beforeAll(async () => {
  const listening = await listenOnLoopback(buildOAuthTestApp)
  t = listening.t
  issuer = new URL(listening.baseUrl)
  client = await createClient(t.db, { redirectUris: ['http://127.0.0.1/callback'], requirePkce: true })
})
afterAll(async () => {
  await t.close()
})

it('completes discovery, code flow with PKCE, exchange and revocation', async () => {
  const options = { [oauth.allowInsecureRequests]: true }
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...options, algorithm: 'oauth2' }))
  const oc: oauth.Client = { client_id: client.clientId }
  const auth = oauth.ClientSecretBasic(client.clientSecret)

  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const redirectUri = 'http://127.0.0.1:53682/callback'
  const url = new URL(as.authorization_endpoint!)
  url.search = new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'read write',
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  }).toString()

  // The user: logs in, sees the consent page, clicks Authorize.
  const browser = await new BrowserSession(t.app).signUpAndLogIn('oauth4webapi@example.com')
  const consent = await browser.get(url.pathname + url.search)
  expect(consent.statusCode).toBe(200)
  const approved = await browser.post('/oauth/authorize', { ...consentFields(consent.body), decision: 'approve' })
  expect(approved.statusCode).toBe(303)
  const callback = new URL(String(approved.headers.location))

  const params = oauth.validateAuthResponse(as, oc, callback, state)
  const response = await oauth.authorizationCodeGrantRequest(as, oc, auth, params, redirectUri, verifier, options)
  const result = await oauth.processAuthorizationCodeResponse(as, oc, response)
  expect(result.token_type).toBe('bearer')
  expect(result.scope).toBe('read write')
  expect(result.access_token).toMatch(/^gat_/)

  const revoked = await oauth.revocationRequest(as, oc, auth, result.access_token, options)
  await oauth.processRevocationResponse(revoked)
  expect((await tokenRow(t.db, result.access_token))?.revoked_at).not.toBeNull()

  // The same client with client_secret_post, and a code replay seen through the library.
  const replay = await oauth.authorizationCodeGrantRequest(
    as,
    oc,
    oauth.ClientSecretPost(client.clientSecret),
    params,
    redirectUri,
    verifier,
    options,
  )
  await expect(oauth.processAuthorizationCodeResponse(as, oc, replay)).rejects.toMatchObject({ error: 'invalid_grant' })
})
