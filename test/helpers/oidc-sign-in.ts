import * as client from 'openid-client'
import { expect } from 'vitest'
import { consentFields } from '../integration/oauth/helpers.js'
import type { BrowserSession } from './browser-session.js'

export type SignInTokens = Awaited<ReturnType<typeof client.authorizationCodeGrant>>

/**
 * One sign-in through an openid-client relying party `rp`, as the library makes it: code + PKCE
 * (S256) + a nonce, and a state when `withState` asks; the user's part played by `user`'s session
 * (a redirect under remembered consent, else the consent page approved); the code exchanged with
 * an ID Token required, which openid-client validates (OpenID Connect Core 3.1.3.7). Returns the
 * tokens and the nonce sent, for the caller's own claims checks.
 */
export async function signInWithOpenIdClient(
  rp: client.Configuration,
  user: BrowserSession,
  request: { redirectUri: string; scope: string; withState?: boolean },
): Promise<{ tokens: SignInTokens; nonce: string }> {
  const verifier = client.randomPKCECodeVerifier()
  const nonce = client.randomNonce()
  const state = request.withState ? client.randomState() : undefined
  const url = client.buildAuthorizationUrl(rp, {
    redirect_uri: request.redirectUri,
    scope: request.scope,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    nonce,
    ...(state ? { state } : {}),
  })
  const tokens = await client.authorizationCodeGrant(rp, await playUsersPart(user, url), {
    pkceCodeVerifier: verifier,
    expectedNonce: nonce,
    ...(state ? { expectedState: state } : {}),
    idTokenExpected: true,
  })
  return { tokens, nonce }
}

/** The user's part: consent (the first time) and the redirect back to the relying party. */
async function playUsersPart(user: BrowserSession, url: URL): Promise<URL> {
  const first = await user.get(url.pathname + url.search)
  if (first.statusCode === 302) return new URL(String(first.headers.location))
  expect(first.statusCode).toBe(200)
  const approved = await user.post('/oauth/authorize', { ...consentFields(first.body), decision: 'approve' })
  expect(approved.statusCode).toBe(303)
  return new URL(String(approved.headers.location))
}
