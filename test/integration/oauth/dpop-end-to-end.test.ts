import type { AddressInfo } from 'node:net'
import { calculateJwkThumbprint, exportJWK } from 'jose'
import { type Verifier, createVerifier } from '@gatehouse/verifier'
import { sha256Hex } from '@gatehouse/verifier/shared'
import type { FastifyInstance } from 'fastify'
import * as client from 'openid-client'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { buildResourceApi } from '../../../examples/resource-api.js'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import type { BrowserSession } from '../../helpers/browser-session.js'
import { type ApplicationFixture, createApplication } from '../../helpers/factories.js'
import { listenOnLoopback } from '../../helpers/loopback.js'
import { NOTICE_WAIT_MS, msUntil } from '../../helpers/propagation.js'
import { consentFields, loggedInUser } from './helpers.js'

/*
 * The "done when", end to end (docs/dpop.md, docs/expiring-tokens.md): a client built on
 * openid-client, unmodified, gets a DPoP-bound token that expires and can be refreshed, calls
 * UserInfo and a resource API protected by @gatehouse/verifier (the example API, database mode)
 * with it; a stolen copy without the key is refused; a retired refresh token presented again
 * ends the family, and the resource API hears it. Every listener is real.
 */

const REDIRECT = 'http://127.0.0.1:53682/callback'
let t: TestContext
let base: string
let api: FastifyInstance
let apiBase: string
let verifier: Verifier
let app: ApplicationFixture
let user: BrowserSession

beforeAll(async () => {
  const listening = await listenOnLoopback(buildTestApp)
  t = listening.t
  base = listening.baseUrl
  app = await createApplication(t.db, { name: 'Field notes', redirectUris: [REDIRECT], scopes: ['openid', 'read'] })
  await t.db
    .updateTable('applications')
    .set({ access_token_ttl_seconds: 3600, refresh_token_ttl_seconds: 30 * 86400 })
    .where('id', '=', app.id)
    .execute()
  user = await loggedInUser(t.app)
  verifier = createVerifier({ mode: 'database', database: t.deps.bus.verifierDatabase(t.deps.database), now: () => t.clock().getTime() })
  await verifier.ready()
  api = await buildResourceApi(verifier)
  await api.listen({ port: 0, host: '127.0.0.1' })
  apiBase = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`
})
afterAll(async () => {
  await api?.close()
  await verifier?.close()
  await t?.close()
})

async function signIn(config: client.Configuration, DPoP: client.DPoPHandle): Promise<client.TokenEndpointResponse> {
  const verifierValue = client.randomPKCECodeVerifier()
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    scope: 'openid read',
    code_challenge: await client.calculatePKCECodeChallenge(verifierValue),
    code_challenge_method: 'S256',
  })
  let answer = await user.get(url.pathname + url.search)
  if (answer.statusCode === 200) answer = await user.post('/oauth/authorize', { ...consentFields(answer.body), decision: 'approve' })
  const callback = new URL(String(answer.headers.location))
  return client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifierValue }, undefined, { DPoP })
}

const me = (token: string, DPoP: client.DPoPHandle, config: client.Configuration) =>
  client.fetchProtectedResource(config, token, new URL('/me', apiBase), 'GET', undefined, undefined, { DPoP })

it('binds, refreshes, refuses a thief, and ends the family on reuse', async () => {
  const config = await client.discovery(new URL(base), app.clientId, app.clientSecret, undefined, {
    execute: [client.allowInsecureRequests],
  })
  const keys = await client.randomDPoPKeyPair('ES256')
  const DPoP = client.getDPoPHandle(config, keys)
  const tokens = await signIn(config, DPoP)
  expect(tokens).toMatchObject({ token_type: 'dpop', expires_in: 3600, refresh_token: expect.stringMatching(/^grt_/) })
  const sub = (tokens as client.TokenEndpointResponse & client.TokenEndpointResponseHelpers).claims()!.sub

  // The holder of the key: UserInfo and the resource API through the verifier.
  expect(await client.fetchUserInfo(config, tokens.access_token, sub, { DPoP })).toMatchObject({ sub })
  expect((await me(tokens.access_token, DPoP, config)).status).toBe(200)

  // A thief with a copy of the token but not the key: as Bearer, or with proofs of its own key.
  const asBearer = await fetch(`${apiBase}/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
  expect(asBearer.status).toBe(401)
  expect(asBearer.headers.get('www-authenticate')).toMatch(/DPoP/)
  const thief = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'))
  await expect(me(tokens.access_token, thief, config)).rejects.toThrow()
  await expect(client.fetchUserInfo(config, tokens.access_token, sub, { DPoP: thief })).rejects.toThrow()

  // Refreshed with a proof of the same key: a new bound pair; the old refresh token is retired.
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP })
  expect(refreshed).toMatchObject({ token_type: 'dpop', expires_in: 3600 })
  expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
  expect((await me(refreshed.access_token, DPoP, config)).status).toBe(200)

  // The first refresh token again, once its successor has been used (so no grace applies): the
  // family ends, and the resource API drops the family's live access token when the notice
  // arrives. (Expiry by the clock is shown where proofs are made by hand, with the same clock:
  // test/integration/resource/verifier-dpop.test.ts, refresh-tokens.test.ts; openid-client
  // dates its proofs by the wall clock.)
  const latest = await client.refreshTokenGrant(config, refreshed.refresh_token!, undefined, { DPoP })
  expect((await me(latest.access_token, DPoP, config)).status).toBe(200)
  await expect(client.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP })).rejects.toMatchObject({
    error: 'invalid_grant',
  })
  expect(await stillServed(latest.access_token)).toBe(false)
  await msUntil(
    () =>
      me(latest.access_token, DPoP, config).then(
        () => false,
        () => true,
      ),
    NOTICE_WAIT_MS,
  )
  await expect(client.refreshTokenGrant(config, latest.refresh_token!, undefined, { DPoP })).rejects.toMatchObject({
    error: 'invalid_grant',
  })
  const events = await t.db.selectFrom('audit_events').select('event').where('event', '=', 'refresh_token.reused').execute()
  expect(events).toHaveLength(1)
})

/** Whether the live-token view still holds the token: the revocation committed once it does not. */
async function stillServed(token: string): Promise<boolean> {
  const row = await t.db.selectFrom('access_tokens').select('revoked_at').where('token_hash', '=', sha256Hex(token)).executeTakeFirst()
  return row?.revoked_at === null
}

/** The key a refresh token's family is bound to (null: not bound). */
async function familyKey(refreshToken: string): Promise<string | null> {
  const row = await t.db
    .selectFrom('refresh_tokens as r')
    .innerJoin('refresh_token_families as f', 'f.id', 'r.family_id')
    .select('f.dpop_jkt')
    .where('r.token_hash', '=', sha256Hex(refreshToken))
    .executeTakeFirstOrThrow()
  return row.dpop_jkt
}

it("binds a confidential client's access tokens but not its refresh token, which its secret protects: a new key refreshes (RFC 9449 §5)", async () => {
  const config = await client.discovery(new URL(base), app.clientId, app.clientSecret, undefined, {
    execute: [client.allowInsecureRequests],
  })
  const first = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'))
  const tokens = await signIn(config, first)
  expect(await familyKey(tokens.refresh_token!)).toBeNull()

  const second = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'))
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: second })
  expect(refreshed.token_type).toBe('dpop')
  expect((await me(refreshed.access_token, second, config)).status).toBe(200)
  await expect(me(refreshed.access_token, first, config)).rejects.toThrow()
})

it("binds a public client's refresh token to its key: a proof of another key, or none, is invalid_dpop_proof, and the family lives on", async () => {
  const native = await createApplication(t.db, {
    name: 'Field notes for phones',
    kind: 'native',
    redirectUris: [REDIRECT],
    scopes: ['openid', 'read'],
  })
  await t.db
    .updateTable('applications')
    .set({ access_token_ttl_seconds: 3600, refresh_token_ttl_seconds: 30 * 86400 })
    .where('id', '=', native.id)
    .execute()
  const config = await client.discovery(new URL(base), native.clientId, undefined, client.None(), {
    execute: [client.allowInsecureRequests],
  })
  const key = await client.randomDPoPKeyPair('ES256')
  const DPoP = client.getDPoPHandle(config, key)
  const tokens = await signIn(config, DPoP)
  expect(await familyKey(tokens.refresh_token!)).toBe(await calculateJwkThumbprint(await exportJWK(key.publicKey)))

  const thief = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'))
  await expect(client.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: thief })).rejects.toMatchObject({
    error: 'invalid_dpop_proof',
  })
  await expect(client.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_dpop_proof' })
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP })
  expect((await me(refreshed.access_token, DPoP, config)).status).toBe(200)
})
