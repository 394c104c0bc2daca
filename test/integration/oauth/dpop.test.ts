import { randomUUID } from 'node:crypto'
import { type CryptoKey, type JWK, SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose'
import * as client from 'openid-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { type ApplicationFixture, createApplication } from '../../helpers/factories.js'
import { listenOnLoopback } from '../../helpers/loopback.js'
import { consentFields, loggedInUser } from './helpers.js'

/*
 * DPoP at the authorization server (RFC 9449, docs/dpop.md), with openid-client's DPoP handle,
 * unmodified, against a listening server: a client that sends a proof gets a token bound to its
 * key (`token_type: DPoP`, access_tokens.dpop_jkt the key's thumbprint) for every grant; one that
 * sends none gets the seed's bearer token, byte for byte as before. Hand-made proofs (jose) show
 * what is refused: a replay, another URL or method, a private key, two headers.
 */

let t: TestContext
let base: string
let web: ApplicationFixture
let machine: ApplicationFixture
let user: BrowserSession
const REDIRECT = 'http://127.0.0.1:53682/callback'

beforeAll(async () => {
  const listening = await listenOnLoopback(buildTestApp)
  t = listening.t
  base = listening.baseUrl
  web = await createApplication(t.db, { name: 'Team Planner', redirectUris: [REDIRECT], scopes: ['openid', 'read'] })
  machine = await createApplication(t.db, { name: 'Nightly sync', kind: 'machine', clientCredentialsScopes: ['read'] })
  user = await loggedInUser(t.app)
})
afterAll(async () => {
  await t?.close()
})

function relyingParty(of: ApplicationFixture, at = base): Promise<client.Configuration> {
  const auth = of.clientSecret === '' ? client.None() : undefined
  return client.discovery(new URL(at), of.clientId, of.clientSecret || undefined, auth, { execute: [client.allowInsecureRequests] })
}

async function thumbprintOf(keys: client.CryptoKeyPair): Promise<string> {
  return calculateJwkThumbprint(await exportJWK(keys.publicKey), 'sha256')
}

async function boundKeyOf(accessToken: string): Promise<string | null> {
  const { sha256Hex } = await import('@gatehouse/verifier/shared')
  const row = await t.db
    .selectFrom('access_tokens')
    .select('dpop_jkt')
    .where('token_hash', '=', sha256Hex(accessToken))
    .executeTakeFirstOrThrow()
  return row.dpop_jkt
}

/** The user's part of a code flow started at `url`: consent when asked, then the redirect back. */
async function usersPart(url: URL, session = user): Promise<URL> {
  const first = await session.get(url.pathname + url.search)
  if (first.statusCode === 302) return new URL(String(first.headers.location))
  expect(first.statusCode).toBe(200)
  const approved = await session.post('/oauth/authorize', { ...consentFields(first.body), decision: 'approve' })
  expect(approved.statusCode).toBe(303)
  return new URL(String(approved.headers.location))
}

/** A code for `of`, its authorize request carrying `extra` (dpop_jkt), and the PKCE verifier. */
async function codeFor(config: client.Configuration, extra: Record<string, string> = {}, scope = 'read') {
  const verifier = client.randomPKCECodeVerifier()
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    scope,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...extra,
  })
  return { callback: await usersPart(url), verifier }
}

/** A proof made by hand, for what openid-client never sends. */
async function handProof(
  keys: { privateKey: CryptoKey; publicKey: CryptoKey },
  claims: { htm?: string; htu?: string; iat?: number; jti?: string; nonce?: string } = {},
  jwk?: JWK,
): Promise<string> {
  const payload = {
    htm: claims.htm ?? 'POST',
    htu: claims.htu ?? `${base}/oauth/token`,
    iat: claims.iat ?? Math.floor(t.clock().getTime() / 1000),
    jti: claims.jti ?? randomUUID(),
    ...(claims.nonce === undefined ? {} : { nonce: claims.nonce }),
  }
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: jwk ?? (await exportJWK(keys.publicKey)) })
    .sign(keys.privateKey)
}

function machineTokenRequest(headers: Record<string, string | string[]>) {
  return t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: machine.clientId,
      client_secret: machine.clientSecret,
    }).toString(),
  })
}

describe('DPoP with openid-client', () => {
  it("publishes the proofs' algorithms in both discovery documents", async () => {
    const config = await relyingParty(web)
    expect(config.serverMetadata().dpop_signing_alg_values_supported).toEqual(expect.arrayContaining(['ES256', 'EdDSA', 'RS256']))
    const oauthMetadata = await t.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })
    expect(oauthMetadata.json().dpop_signing_alg_values_supported).not.toContain('HS256')
    expect(oauthMetadata.json().dpop_signing_alg_values_supported).toContain('ES256')
  })

  it('code flow: the token is bound to the key of the proof, ID Token and all', async () => {
    const config = await relyingParty(web)
    const keys = await client.randomDPoPKeyPair()
    const DPoP = client.getDPoPHandle(config, keys)
    const { callback, verifier } = await codeFor(config, {}, 'openid read')
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier }, undefined, { DPoP })
    expect(tokens.token_type).toBe('dpop')
    expect(tokens.id_token).toEqual(expect.any(String))
    expect(await boundKeyOf(tokens.access_token)).toBe(await thumbprintOf(keys))
  })

  it('a web app that sends no proof gets exactly the bearer response it got before', async () => {
    const config = await relyingParty(web)
    const { callback, verifier } = await codeFor(config)
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier })
    expect(Object.keys(tokens).sort()).toEqual(['access_token', 'created_at', 'scope', 'token_type'])
    expect(tokens.token_type).toBe('bearer')
    expect(await boundKeyOf(tokens.access_token)).toBeNull()
  })

  it('client credentials: a machine token bound to the key', async () => {
    const config = await relyingParty(machine)
    const keys = await client.randomDPoPKeyPair()
    const tokens = await client.clientCredentialsGrant(config, undefined, { DPoP: client.getDPoPHandle(config, keys) })
    expect(tokens.token_type).toBe('dpop')
    expect(await boundKeyOf(tokens.access_token)).toBe(await thumbprintOf(keys))
  })

  it('a public client (native app) binds its code and token with no secret at all, through the consent page', async () => {
    const native = await createApplication(t.db, { kind: 'native', redirectUris: [REDIRECT], scopes: ['read'] })
    const config = await relyingParty(native)
    const keys = await client.randomDPoPKeyPair('EdDSA')
    // A native app on a loopback redirect is asked every time: the held request keeps dpop_jkt.
    const { callback, verifier } = await codeFor(config, { dpop_jkt: await thumbprintOf(keys) })
    const { sha256Hex } = await import('@gatehouse/verifier/shared')
    const code = await t.db
      .selectFrom('authorization_codes')
      .select('dpop_jkt')
      .where('code_hash', '=', sha256Hex(callback.searchParams.get('code')!))
      .executeTakeFirstOrThrow()
    expect(code.dpop_jkt).toBe(await thumbprintOf(keys))
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier }, undefined, {
      DPoP: client.getDPoPHandle(config, keys),
    })
    expect(tokens.token_type).toBe('dpop')
    expect(await boundKeyOf(tokens.access_token)).toBe(await thumbprintOf(keys))
  })

  it('dpop_jkt binds the code: exchanged with that key it works, with another key or none it is invalid_grant', async () => {
    const config = await relyingParty(web)
    const keys = await client.randomDPoPKeyPair()
    const other = await client.randomDPoPKeyPair()
    const jkt = await thumbprintOf(keys)

    const first = await codeFor(config, { dpop_jkt: jkt })
    const code = first.callback.searchParams.get('code')!
    const { sha256Hex } = await import('@gatehouse/verifier/shared')
    const row = await t.db
      .selectFrom('authorization_codes')
      .select('dpop_jkt')
      .where('code_hash', '=', sha256Hex(code))
      .executeTakeFirstOrThrow()
    expect(row.dpop_jkt).toBe(jkt)
    const withOther = await client
      .authorizationCodeGrant(config, first.callback, { pkceCodeVerifier: first.verifier }, undefined, {
        DPoP: client.getDPoPHandle(config, other),
      })
      .catch((e: unknown) => e)
    expect(withOther).toMatchObject({ error: 'invalid_grant' })
    const withNone = await client
      .authorizationCodeGrant(config, first.callback, { pkceCodeVerifier: first.verifier })
      .catch((e: unknown) => e)
    expect(withNone).toMatchObject({ error: 'invalid_grant' })
    // Neither refusal used the code up.
    const tokens = await client.authorizationCodeGrant(config, first.callback, { pkceCodeVerifier: first.verifier }, undefined, {
      DPoP: client.getDPoPHandle(config, keys),
    })
    expect(await boundKeyOf(tokens.access_token)).toBe(jkt)
  })

  it('dpop_jkt that is no thumbprint is refused at authorize', async () => {
    const config = await relyingParty(web)
    const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'read', dpop_jkt: 'not-a-thumbprint' })
    const answer = await user.get(url.pathname + url.search)
    expect(answer.statusCode).toBe(302)
    expect(new URL(String(answer.headers.location)).searchParams.get('error')).toBe('invalid_request')
  })

  it('PAR with a proof binds the code to its key; a dpop_jkt beside it must name the same key', async () => {
    const config = await relyingParty(web)
    const keys = await client.randomDPoPKeyPair()
    const DPoP = client.getDPoPHandle(config, keys)
    const verifier = client.randomPKCECodeVerifier()
    const url = await client.buildAuthorizationUrlWithPAR(
      config,
      {
        redirect_uri: REDIRECT,
        scope: 'read',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      },
      { DPoP },
    )
    const callback = await usersPart(url)
    const other = await client
      .authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier }, undefined, {
        DPoP: client.getDPoPHandle(config, await client.randomDPoPKeyPair()),
      })
      .catch((e: unknown) => e)
    expect(other).toMatchObject({ error: 'invalid_grant' })
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier }, undefined, { DPoP })
    expect(await boundKeyOf(tokens.access_token)).toBe(await thumbprintOf(keys))

    const mismatched = await client
      .buildAuthorizationUrlWithPAR(
        config,
        { redirect_uri: REDIRECT, scope: 'read', dpop_jkt: await thumbprintOf(await client.randomDPoPKeyPair()) },
        { DPoP },
      )
      .catch((e: unknown) => e)
    expect(mismatched).toMatchObject({ error: 'invalid_dpop_proof' })
  })

  it('an application that requires DPoP refuses a token request without a proof, and the code stays usable', async () => {
    const strict = await createApplication(t.db, { redirectUris: [REDIRECT], scopes: ['read'] })
    await t.db.updateTable('applications').set({ require_dpop: true }).where('id', '=', strict.id).execute()
    const config = await relyingParty(strict)
    const { callback, verifier } = await codeFor(config)
    const refused = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier }).catch((e: unknown) => e)
    expect(refused).toMatchObject({ error: 'invalid_dpop_proof' })
    const keys = await client.randomDPoPKeyPair()
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier }, undefined, {
      DPoP: client.getDPoPHandle(config, keys),
    })
    expect(tokens.token_type).toBe('dpop')

    const strictMachine = await createApplication(t.db, { kind: 'machine', clientCredentialsScopes: ['read'] })
    await t.db.updateTable('applications').set({ require_dpop: true }).where('id', '=', strictMachine.id).execute()
    const refusedMachine = await client.clientCredentialsGrant(await relyingParty(strictMachine)).catch((e: unknown) => e)
    expect(refusedMachine).toMatchObject({ error: 'invalid_dpop_proof' })
  })
})

describe('proofs the token endpoint refuses (invalid_dpop_proof)', () => {
  it('a proof used twice', async () => {
    const keys = await generateKeyPair('ES256')
    const proof = await handProof(keys)
    const first = await machineTokenRequest({ dpop: proof })
    expect(first.statusCode).toBe(200)
    expect(first.json()).toMatchObject({ token_type: 'DPoP' })
    const again = await machineTokenRequest({ dpop: proof })
    expect(again.statusCode).toBe(400)
    expect(again.json()).toMatchObject({ error: 'invalid_dpop_proof', error_description: expect.stringContaining('used before') })
  })

  it('a proof for another URL, another method, or signed with a private key in its header', async () => {
    const keys = await generateKeyPair('ES256', { extractable: true })
    const cases = [
      await handProof(keys, { htu: `${base}/oauth/par` }),
      await handProof(keys, { htu: 'https://elsewhere.example/oauth/token' }),
      await handProof(keys, { htm: 'GET' }),
      await handProof(keys, { iat: Math.floor(t.clock().getTime() / 1000) - 3600 }),
      await handProof(keys, {}, await exportJWK(keys.privateKey)),
      'not.a.proof',
    ]
    for (const proof of cases) {
      const answer = await machineTokenRequest({ dpop: proof })
      expect(answer.statusCode).toBe(400)
      expect(answer.json().error).toBe('invalid_dpop_proof')
    }
  })

  it('two DPoP headers, however they are sent', async () => {
    const keys = await generateKeyPair('ES256')
    const [a, b] = [await handProof(keys), await handProof(keys)]
    for (const headers of [{ dpop: [a, b] }, { dpop: `${a}, ${b}` }]) {
      const answer = await machineTokenRequest(headers)
      expect(answer.statusCode).toBe(400)
      expect(answer.json()).toMatchObject({ error: 'invalid_dpop_proof', error_description: expect.stringContaining('exactly one') })
    }
  })

  it("the proof's URL is the issuer's, whatever Host the request names", async () => {
    const keys = await generateKeyPair('ES256')
    const answer = await machineTokenRequest({
      dpop: await handProof(keys, { htu: 'http://attacker.example/oauth/token' }),
      host: 'attacker.example',
    })
    expect(answer.json().error).toBe('invalid_dpop_proof')
  })
})

describe('the device grant', () => {
  it("binds the device's token to its proof's key", async () => {
    const app = await createApplication(t.db, { scopes: ['read'] })
    await t.db.updateTable('applications').set({ allow_device_flow: true }).where('id', '=', app.id).execute()
    const form = { client_id: app.clientId, client_secret: app.clientSecret }
    const started = await t.app.inject({
      method: 'POST',
      url: '/oauth/device_authorization',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ ...form, scope: 'read' }).toString(),
    })
    const { device_code: deviceCode, user_code: userCode } = started.json()
    const session = await loggedInUser(t.app)
    await session.get(`/device?user_code=${encodeURIComponent(userCode)}`)
    const consent = await session.post('/device', { user_code: userCode })
    expect(consent.statusCode, consent.body).toBe(200)
    const requestId = /name="request_id" value="([^"]+)"/.exec(consent.body)![1]!
    expect((await session.post('/device/answer', { request_id: requestId, decision: 'approve' })).statusCode).toBe(200)
    const keys = await generateKeyPair('ES256')
    const answer = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { dpop: await handProof(keys), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        ...form,
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
        device_code: deviceCode,
      }).toString(),
    })
    expect(answer.statusCode).toBe(200)
    expect(answer.json().token_type).toBe('DPoP')
    expect(await boundKeyOf(answer.json().access_token)).toBe(await calculateJwkThumbprint(await exportJWK(keys.publicKey)))
  })
})

describe('server nonces (DPOP_NONCE=required)', () => {
  let strict: TestContext
  let strictBase: string
  let strictMachine: ApplicationFixture

  beforeAll(async () => {
    const listening = await listenOnLoopback((env) => buildTestApp({ ...env, DPOP_NONCE: 'required' }))
    strict = listening.t
    strictBase = listening.baseUrl
    strictMachine = await createApplication(strict.db, { kind: 'machine', clientCredentialsScopes: ['read'] })
  })
  afterAll(async () => {
    await strict?.close()
  })
  function strictForm(): string {
    return new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: strictMachine.clientId,
      client_secret: strictMachine.clientSecret,
    }).toString()
  }

  it('openid-client is answered use_dpop_nonce, retries with the nonce by itself, and succeeds', async () => {
    const config = await relyingParty(strictMachine, strictBase)
    let answers: { status: number; nonce: string | null }[] = []
    config[client.customFetch] = async (url, options) => {
      const response = await fetch(url, options as RequestInit)
      if (new URL(url).pathname === '/oauth/token') answers.push({ status: response.status, nonce: response.headers.get('dpop-nonce') })
      return response
    }
    const DPoP = client.getDPoPHandle(config, await client.randomDPoPKeyPair())
    const tokens = await client.clientCredentialsGrant(config, undefined, { DPoP })
    expect(tokens.token_type).toBe('dpop')
    expect(answers).toEqual([
      { status: 400, nonce: expect.any(String) },
      { status: 200, nonce: expect.any(String) },
    ])
    // The nonce is remembered by the handle: the next request needs no retry.
    answers = []
    await client.clientCredentialsGrant(config, undefined, { DPoP })
    expect(answers.map((a) => a.status)).toEqual([200])
  })

  it('a nonce from two buckets ago is refused with a fresh one', async () => {
    const keys = await generateKeyPair('ES256')
    const first = await strict.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        dpop: await handProof(keys, { htu: `${strictBase}/oauth/token`, iat: Math.floor(strict.clock().getTime() / 1000) }),
      },
      payload: strictForm(),
    })
    expect(first.json().error).toBe('use_dpop_nonce')
    const nonce = String(first.headers['dpop-nonce'])
    strict.clock.advance(11 * 60_000)
    const late = await strict.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        dpop: await handProof(keys, { htu: `${strictBase}/oauth/token`, iat: Math.floor(strict.clock().getTime() / 1000), nonce }),
      },
      payload: strictForm(),
    })
    expect(late.json().error).toBe('use_dpop_nonce')
    expect(late.headers['dpop-nonce']).not.toBe(nonce)
  })
})

describe('CORS for a single-page app', () => {
  it('allows the dpop header and exposes dpop-nonce', async () => {
    const spa = await createApplication(t.db, { kind: 'spa', redirectUris: ['https://spa.example/cb'], scopes: ['read'] })
    void spa
    const preflight = await t.app.inject({
      method: 'OPTIONS',
      url: '/oauth/token',
      headers: { origin: 'https://spa.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'dpop' },
    })
    expect(preflight.statusCode).toBe(204)
    expect(preflight.headers['access-control-allow-headers']).toContain('dpop')
    const keys = await generateKeyPair('ES256')
    const answer = await machineTokenRequest({ dpop: await handProof(keys), origin: 'https://spa.example' })
    expect(answer.headers['access-control-expose-headers']).toContain('dpop-nonce')
  })
})
