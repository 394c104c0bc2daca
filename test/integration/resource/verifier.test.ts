import { readFileSync } from 'node:fs'
import { sha256Hex } from '../../../src/lib/crypto.js'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildResourceApi } from '../../../examples/resource-api.js'
import { generateAccessToken } from '../../../src/lib/tokens.js'
import { revoke } from '../../../src/revocation/revoke.js'
import { REVOCATION_CHANNEL } from '@gatehouse/verifier/shared'
import { type Verifier, createVerifier } from '@gatehouse/verifier'
import {
  type AccessTokenFixture,
  type ApplicationFixture,
  type UserFixture,
  createAccessToken,
  createApplication,
  createUser,
} from '../../helpers/factories.js'
import { type TestContext, buildTestApp } from '../../helpers/app.js'

/*
 * The verifier in database mode, behind the example resource API (GET /me needs read,
 * POST /teams needs write_teams). Its queries are counted through the same Kysely plugin as
 * the app's, and its clock is the test's.
 */

let t: TestContext
let verifier: Verifier
let api: FastifyInstance
let user: UserFixture
let app: ApplicationFixture

beforeAll(async () => {
  t = await buildTestApp()
  verifier = createVerifier({ mode: 'database', database: t.deps.bus.verifierDatabase(t.deps.database), now: () => t.clock().getTime() })
  await verifier.ready()
  api = await buildResourceApi(verifier)
  user = await createUser(t.db, { email: 'player@example.com' })
  app = await createApplication(t.db, { ownerId: user.id })
})
afterAll(async () => {
  await api.close()
  await verifier.close()
  await t.close()
})

function token(scopes: string[]): Promise<AccessTokenFixture> {
  return createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes })
}

function get(authorization?: string, url = '/me') {
  return api.inject({ method: 'GET', url, headers: authorization === undefined ? {} : { authorization } })
}

function createTeam(authorization: string) {
  return api.inject({ method: 'POST', url: '/teams', headers: { authorization }, payload: { name: 'Tigers' } })
}

describe('verifier: 401 and 403 (RFC 6750 3)', () => {
  it('lets a valid token through and hands its user, application and scopes to the handler', async () => {
    const tok = await token(['read'])
    const res = await get(`Bearer ${tok.token}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ user_id: user.id, email: 'player@example.com', application: app.clientId, scopes: ['read'] })
  })

  it('answers a request without a token with 401 and a bare challenge', async () => {
    for (const authorization of [undefined, 'Basic dXNlcjpwYXNz', 'Token abc']) {
      const res = await get(authorization)
      expect(res.statusCode).toBe(401)
      expect(res.headers['www-authenticate']).toBe(
        'Bearer realm="gatehouse", DPoP algs="ES256 ES384 ES512 EdDSA Ed25519 PS256 PS384 PS512 RS256 RS384 RS512"',
      )
      expect(res.body).toBe('')
    }
  })

  it('reads the Authorization header only: ?access_token= and a form body are ignored', async () => {
    const tok = await token(['read', 'write'])
    expect((await get(undefined, `/me?access_token=${tok.token}`)).statusCode).toBe(401)
    const form = await api.inject({
      method: 'POST',
      url: '/teams',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `access_token=${tok.token}`,
    })
    expect(form.statusCode).toBe(401)
  })

  it('answers an invalid token with 401 invalid_token', async () => {
    const revoked = await token(['read'])
    expect(
      await revoke(
        t.revocation,
        { kind: 'token-of-client', clientId: app.clientId, secretHash: sha256Hex(app.clientSecret), tokenHash: revoked.digest },
        new Date(),
      ),
    ).toBe(1)
    for (const bad of [revoked.token, generateAccessToken(), 'garbage', '']) {
      const res = await get(`Bearer ${bad}`)
      expect(res.statusCode).toBe(401)
      expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="gatehouse", error="invalid_token"/)
      expect(res.json()).toMatchObject({ error: 'invalid_token' })
    }
  })

  it('answers a missing scope with 403 insufficient_scope naming the scope', async () => {
    const tok = await token(['read', 'write_members'])
    const res = await createTeam(`Bearer ${tok.token}`)
    expect(res.statusCode).toBe(403)
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="gatehouse", error="insufficient_scope", error_description="The access token lacks the scope write_teams", scope="write_teams", DPoP algs="ES256 ES384 ES512 EdDSA Ed25519 PS256 PS384 PS512 RS256 RS384 RS512"',
    )
    expect(res.json()).toEqual({
      error: 'insufficient_scope',
      error_description: 'The access token lacks the scope write_teams',
      scope: 'write_teams',
    })
  })

  it('lets write satisfy write_teams, and write_teams itself, but not read', async () => {
    expect((await createTeam(`Bearer ${(await token(['write'])).token}`)).statusCode).toBe(201)
    expect((await createTeam(`Bearer ${(await token(['write_teams'])).token}`)).statusCode).toBe(201)
    expect((await createTeam(`Bearer ${(await token(['read'])).token}`)).statusCode).toBe(403)
    // write_teams does not imply read.
    expect((await get(`Bearer ${(await token(['write_teams'])).token}`)).statusCode).toBe(403)
  })
})

describe('verifier cache', () => {
  it('answers a cached token without touching the database', async () => {
    const tok = await token(['read'])
    const before = t.queries.count
    expect((await get(`Bearer ${tok.token}`)).statusCode).toBe(200)
    expect(t.queries.count - before).toBe(1)
    const warm = t.queries.count
    for (let i = 0; i < 10; i++) expect((await get(`Bearer ${tok.token}`)).statusCode).toBe(200)
    expect(verifier.verifyCached(`Bearer ${tok.token}`, 'read')).toMatchObject({ ok: true })
    expect(t.queries.count).toBe(warm)
  })

  it('remembers an unknown token for 5 seconds, and never looks garbage up', async () => {
    const unknown = generateAccessToken()
    const before = t.queries.count
    expect((await get(`Bearer ${unknown}`)).statusCode).toBe(401)
    expect(t.queries.count - before).toBe(1)
    for (let i = 0; i < 10; i++) {
      expect((await get(`Bearer ${unknown}`)).statusCode).toBe(401)
      expect((await get(`Bearer garbage-${i}`)).statusCode).toBe(401)
      expect((await get(`Bearer ${unknown.slice(0, -3)}${i}AA`)).statusCode).toBe(401)
    }
    expect(t.queries.count - before).toBe(1)
    t.clock.advance(5_000)
    expect((await get(`Bearer ${unknown}`)).statusCode).toBe(401)
    expect(t.queries.count - before).toBe(2)
  })

  it('trusts a valid answer for the TTL and no longer', async () => {
    const tok = await token(['read'])
    expect((await get(`Bearer ${tok.token}`)).statusCode).toBe(200)
    // Revoked behind the caches' back: no notice at all.
    await t.db.updateTable('access_tokens').set({ revoked_at: new Date() }).where('token_hash', '=', tok.digest).execute()
    t.clock.advance(59_999)
    expect((await get(`Bearer ${tok.token}`)).statusCode).toBe(200)
    t.clock.advance(1)
    expect((await get(`Bearer ${tok.token}`)).statusCode).toBe(401)
  })

  it('holds a bounded number of tokens, evicting the least recently used', async () => {
    const small = createVerifier({
      mode: 'database',
      database: t.deps.bus.verifierDatabase(t.deps.database),
      maxEntries: 3,
      now: () => t.clock().getTime(),
    })
    try {
      const toks = await Promise.all([1, 2, 3, 4].map(() => token(['read'])))
      for (const tok of toks.slice(0, 3)) expect((await small.verify(`Bearer ${tok.token}`)).ok).toBe(true)
      // Touch the first, so the second is now the least recently used.
      expect(small.verifyCached(`Bearer ${toks[0]!.token}`)).toMatchObject({ ok: true })
      expect((await small.verify(`Bearer ${toks[3]!.token}`)).ok).toBe(true)
      expect(small.verifyCached(`Bearer ${toks[1]!.token}`)).toBeUndefined()
      for (const i of [0, 2, 3]) expect(small.verifyCached(`Bearer ${toks[i]!.token}`)).toMatchObject({ ok: true })
    } finally {
      await small.close()
    }
  })

  it('drops a token revoked in this process at once', async () => {
    const tok = await token(['read'])
    expect((await get(`Bearer ${tok.token}`)).statusCode).toBe(200)
    expect(
      await revoke(
        t.revocation,
        { kind: 'token-of-client', clientId: app.clientId, secretHash: sha256Hex(app.clientSecret), tokenHash: tok.digest },
        new Date(),
      ),
    ).toBe(1)
    expect((await get(`Bearer ${tok.token}`)).statusCode).toBe(401)
  })

  it('drops a token once a NOTIFY names it', async () => {
    const tok = await token(['read'])
    expect((await get(`Bearer ${tok.token}`)).statusCode).toBe(200)
    await t.db.updateTable('access_tokens').set({ revoked_at: new Date() }).where('token_hash', '=', tok.digest).execute()
    await sql`select pg_notify(${REVOCATION_CHANNEL}, ${tok.digest})`.execute(t.db)
    await expect.poll(async () => (await get(`Bearer ${tok.token}`)).statusCode, { interval: 10 }).toBe(401)
  })

  it('drops every token of an application when it is deleted', async () => {
    const owner = await createUser(t.db)
    const doomed = await createApplication(t.db, { ownerId: owner.id })
    const tok = await createAccessToken(t.db, { userId: owner.id, applicationId: doomed.id })
    expect((await get(`Bearer ${tok.token}`)).statusCode).toBe(200)
    const { deleteApplication } = await import('../../../src/applications/applications.js')
    await deleteApplication(t.db, t.deps.bus, doomed.id, owner.id, t.clock(), t.deps.audit.trail(owner.id, null))
    expect((await get(`Bearer ${tok.token}`)).statusCode).toBe(401)
  })

  it("refuses a cache TTL beyond the spec's 5 minutes", () => {
    expect(() =>
      createVerifier({ mode: 'database', database: t.deps.bus.verifierDatabase(t.deps.database), cacheTtlSeconds: 301 }),
    ).toThrow(/at most 300/)
  })
})

describe('supported versions (packages/verifier/README.md "Fastify and Node")', () => {
  const json = (path: string) => JSON.parse(readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8'))

  // The adapter tests above run on the repository's fastify: it must be the oldest the peer
  // range admits, and Node the oldest the engines admit when the suite runs on Node 20, so
  // that the oldest supported pair is the one tested.
  it('tests the Fastify adapter on the oldest Fastify the peer range admits', () => {
    const verifier = json('packages/verifier/package.json')
    const oldest = /^\^(\d+\.\d+\.\d+)$/.exec(verifier.peerDependencies.fastify)?.[1]
    expect(oldest, verifier.peerDependencies.fastify).toBeDefined()
    expect(json('node_modules/fastify/package.json').version).toBe(oldest)
    expect(verifier.engines.node).toBe('>=20')
    expect(json('package.json').engines.node).toBe('>=20')
  })
})
