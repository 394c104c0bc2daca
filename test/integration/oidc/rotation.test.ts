import { type JSONWebKeySet, createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose'
import * as client from 'openid-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROTATION_DELAY_MS } from '../../../src/oauth/identity/signing-keys.js'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { type TestClient, createClient } from '../oauth/helpers.js'
import { listenOnLoopback } from '../../helpers/loopback.js'
import { signInWithOpenIdClient } from '../../helpers/oidc-sign-in.js'
import { runCliOn } from '../../helpers/cli.js'

/*
 * Key rotation as a relying party lives it (docs/decisions/014-signing-keys.md):
 * openid-client signs a user in before `gatehouse keys rotate`, right after it, and once the next
 * key has taken over. The next key is in the JWKS before it signs anything; openid-client, which
 * caches the JWKS, verifies the next key's ID Tokens (it fetches the key set again for an unknown
 * kid); the ID Token signed before the rotation still verifies against the JWKS after it.
 */

let t: TestContext
let issuer: URL
let app: TestClient
let browser: BrowserSession
const REDIRECT = 'http://127.0.0.1:53683/callback'
/** How long each process trusts its copy of the published keys (src/oauth/identity/signing-keys.ts KEY_CACHE_TTL_MS). */
const KEY_CACHE_TTL_MS = 60_000

beforeAll(async () => {
  const listening = await listenOnLoopback(buildTestApp)
  t = listening.t
  issuer = new URL(listening.baseUrl)
  app = await createClient(t.db, { redirectUris: [REDIRECT], scopes: ['openid', 'email'], requirePkce: true })
  browser = await new BrowserSession(t.app).signUpAndLogIn('rotation@example.com')
})
afterAll(async () => {
  await t.close()
})

/**
 * With the token endpoint's ID Token, openid-client checks the claims and, only when asked to
 * (OpenID Connect Core 3.1.3.7 lets TLS stand in for it), the signature against its cached JWKS:
 * enableNonRepudiationChecks asks.
 */
const relyingParty = () =>
  client.discovery(issuer, app.clientId, app.clientSecret, undefined, {
    execute: [client.allowInsecureRequests, client.enableNonRepudiationChecks],
  })

/** `gatehouse keys rotate`, run as the command line runs it: services of its own on the same database. */
async function rotate(): Promise<void> {
  const { code, out, err } = await runCliOn(t, ['keys', 'rotate'])
  expect(code, `${out}\n${err}`).toBe(0)
}

/** One sign-in of the user through `rp`: code + PKCE + nonce, the ID Token and its signature validated by openid-client. */
async function signIn(rp: client.Configuration): Promise<{ idToken: string; kid: string }> {
  const { tokens, nonce } = await signInWithOpenIdClient(rp, browser, { redirectUri: REDIRECT, scope: 'openid email' })
  expect(tokens.claims()).toMatchObject({ iss: issuer.origin, aud: app.clientId, nonce })
  return { idToken: tokens.id_token!, kid: decodeProtectedHeader(tokens.id_token!).kid! }
}

async function publishedJwks(): Promise<JSONWebKeySet> {
  const res = await fetch(new URL('/.well-known/jwks.json', issuer))
  expect(res.status).toBe(200)
  return (await res.json()) as JSONWebKeySet
}

const kids = (jwks: JSONWebKeySet | undefined) => (jwks?.keys ?? []).map((k) => k.kid)

describe('signing key rotation, seen by an openid-client relying party', () => {
  it('publishes the next key before it signs, and every ID Token verifies across the rotation', async () => {
    const rp = await relyingParty()
    const first = await signIn(rp)
    const k1 = first.kid
    expect(kids(await publishedJwks())).toEqual([k1])

    const rotatedAt = t.clock().getTime()
    await rotate()
    // Every process reads the keys again within KEY_CACHE_TTL_MS: then the JWKS holds the next key…
    t.clock.advance(KEY_CACHE_TTL_MS)
    const published = kids(await publishedJwks())
    expect(published).toHaveLength(2)
    expect(published).toContain(k1)
    const k2 = published.find((kid) => kid !== k1)!

    // …which signs nothing yet: a sign-in now gets an ID Token of K1, verified from the relying
    // party's cached key set, which never held K2.
    const during = await signIn(rp)
    expect(during.kid).toBe(k1)
    const cached = client.getJwksCache(rp)!
    expect(kids(cached.jwks)).toEqual([k1])

    // Past the lead time K2 signs. The relying party's cached key set (K1 only) is over a minute
    // old here, as it would be after ROTATION_DELAY_MS; its age is set through openid-client's own
    // cache API, since the injected clock moves Gatehouse's time, not the library's.
    t.clock.set(new Date(rotatedAt + ROTATION_DELAY_MS))
    const later = await relyingParty()
    client.setJwksCache(later, { jwks: cached.jwks, uat: cached.uat - KEY_CACHE_TTL_MS / 1000 - 1 })
    const after = await signIn(later)
    expect(after.kid).toBe(k2)
    expect(kids(client.getJwksCache(later)?.jwks)).toEqual(expect.arrayContaining([k1, k2]))

    // The ID Token K1 signed before the rotation verifies against the JWKS published now.
    const jwks = await publishedJwks()
    expect(kids(jwks)).toEqual(expect.arrayContaining([k1, k2]))
    const verified = await jwtVerify(first.idToken, createLocalJWKSet(jwks), {
      issuer: issuer.origin,
      audience: app.clientId,
      currentDate: t.clock(),
    })
    expect(verified.protectedHeader.kid).toBe(k1)
  })
})
