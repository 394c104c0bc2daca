import { sha256Hex } from '../../../src/lib/crypto.js'
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { deleteApplication } from '../../../src/applications/applications.js'
import { generateAccessToken, generateClientSecret } from '../../../src/lib/tokens.js'
import { revoke } from '../../../src/revocation/revoke.js'
import { REVOCATION_CHANNEL } from '@gatehouse/verifier/shared'
import {
  type AccessTokenFixture,
  type ApplicationFixture,
  basicAuth,
  createAccessToken,
  createApplication,
  createTokenSetup,
  createUser,
} from '../../helpers/factories.js'
import { resourceServerTestFile } from '../../helpers/file-set-up.js'

/** `rs`: another registered application, the resource server that introspects. */
const { t, user, app, rs } = resourceServerTestFile({ userEmail: 'coach@example.com', resourceServerName: 'Resource server' })

function introspect(
  token: string | undefined,
  auth: ApplicationFixture | 'none' | { form: ApplicationFixture } = rs,
  extra: Record<string, string> = {},
) {
  const form: Record<string, string> = { ...extra }
  if (token !== undefined) form.token = token
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' }
  if (auth !== 'none' && 'form' in auth) {
    form.client_id = auth.form.clientId
    form.client_secret = auth.form.clientSecret
  } else if (auth !== 'none') {
    headers.authorization = basicAuth(auth.clientId, auth.clientSecret)
  }
  return t.app.inject({ method: 'POST', url: '/oauth/introspect', headers, payload: new URLSearchParams(form).toString() })
}

async function newToken(scopes = ['read', 'write_teams']): Promise<AccessTokenFixture> {
  return createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes })
}

describe('POST /oauth/introspect (RFC 7662)', () => {
  it('describes an active token', async () => {
    const tok = await newToken()
    const res = await introspect(tok.token)
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(/^application\/json/)
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.json()).toEqual({
      active: true,
      scope: 'read write_teams',
      client_id: app.clientId,
      username: 'coach@example.com',
      sub: user.id,
      token_type: 'Bearer',
      iat: Math.floor(tok.createdAt.getTime() / 1000),
    })
  })

  it('accepts client credentials in the form as well as over Basic', async () => {
    const tok = await newToken()
    expect((await introspect(tok.token, { form: rs })).json()).toMatchObject({ active: true, username: 'coach@example.com' })
  })

  it("tells the token's own application about it without username, and a stranger nothing", async () => {
    const tok = await newToken()
    const own = await introspect(tok.token, app)
    expect(own.statusCode).toBe(200)
    expect(own.json()).toEqual({
      active: true,
      scope: 'read write_teams',
      client_id: app.clientId,
      sub: user.id,
      token_type: 'Bearer',
      iat: Math.floor(tok.createdAt.getTime() / 1000),
    })
    // Any registered application that is not a resource server: exactly the answer for an unknown token.
    const stranger = await createApplication(t.db, { name: 'Curious stranger' })
    for (const auth of [stranger, { form: stranger }] as const) {
      const res = await introspect(tok.token, auth)
      expect(res.statusCode).toBe(200)
      expect(res.body).toBe('{"active":false}')
    }
    // Answered from the cache too: the resource server's cached answer is not handed out.
    expect((await introspect(tok.token, rs)).json()).toMatchObject({ active: true, username: 'coach@example.com' })
    expect((await introspect(tok.token, stranger)).body).toBe('{"active":false}')
    expect((await introspect(tok.token, app)).json()).not.toHaveProperty('username')
  })

  it('answers exactly {"active":false} for revoked, unknown and malformed tokens', async () => {
    const revoked = await newToken()
    expect(
      await revoke(
        t.revocation,
        { kind: 'token-of-client', clientId: app.clientId, secretHash: sha256Hex(app.clientSecret), tokenHash: revoked.digest },
        new Date(),
      ),
    ).toBe(1)
    const badChecksum = `${revoked.token.slice(0, -1)}${revoked.token.endsWith('A') ? 'B' : 'A'}`
    for (const token of [revoked.token, generateAccessToken(), 'garbage', badChecksum, `gat_${'x'.repeat(5000)}`]) {
      const res = await introspect(token)
      expect(res.statusCode, token.slice(0, 20)).toBe(200)
      expect(res.body).toBe('{"active":false}')
      expect(res.headers['cache-control']).toBe('no-store')
    }
  })

  it('refuses missing and wrong credentials with 401 invalid_client', async () => {
    const tok = await newToken()
    const missing = await introspect(tok.token, 'none')
    expect(missing.statusCode).toBe(401)
    expect(missing.json()).toMatchObject({ error: 'invalid_client' })
    expect(missing.headers['cache-control']).toBe('no-store')

    const wrongSecret = await introspect(tok.token, { ...rs, clientSecret: `${rs.clientSecret}x` })
    expect(wrongSecret.statusCode).toBe(401)
    expect(wrongSecret.json()).toMatchObject({ error: 'invalid_client' })
    expect(wrongSecret.headers['www-authenticate']).toMatch(/^Basic/)

    const unknown = await introspect(tok.token, { form: { ...rs, clientId: 'no-such-client' } })
    expect(unknown.statusCode).toBe(401)
    expect(unknown.json()).toMatchObject({ error: 'invalid_client' })
    // Nothing about the token leaks to an unauthenticated caller.
    expect(unknown.body).not.toContain('active')
  })

  it('requires the token parameter (an empty value counts as omitted, RFC 6749 3.1)', async () => {
    for (const token of [undefined, '']) {
      const res = await introspect(token)
      expect(res.statusCode).toBe(400)
      expect(res.json()).toMatchObject({ error: 'invalid_request' })
    }
  })

  it('ignores a token in the query string', async () => {
    const tok = await newToken()
    const res = await t.app.inject({
      method: 'POST',
      url: `/oauth/introspect?token=${tok.token}`,
      headers: { authorization: basicAuth(rs.clientId, rs.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
      payload: '',
    })
    expect(res.statusCode).toBe(400)
  })
})

describe('introspection cache', () => {
  it('answers a repeated introspection without any database query', async () => {
    const tok = await newToken()
    const fresh = await createApplication(t.db, { resourceServer: true })
    const before = t.queries.count
    expect((await introspect(tok.token, fresh)).json()).toMatchObject({ active: true })
    // One lookup for the client, one for the token.
    expect(t.queries.count - before).toBe(2)
    const warm = t.queries.count
    for (let i = 0; i < 5; i++) expect((await introspect(tok.token, fresh)).json()).toMatchObject({ active: true })
    expect(t.queries.count).toBe(warm)
  })

  it('remembers unknown tokens briefly and never looks malformed ones up', async () => {
    await introspect(generateAccessToken())
    const unknown = generateAccessToken()
    const before = t.queries.count
    await introspect(unknown)
    expect(t.queries.count - before).toBe(1)
    const after = t.queries.count
    await introspect(unknown)
    await introspect('garbage')
    await introspect(`${unknown.slice(0, -2)}zz`)
    expect(t.queries.count).toBe(after)
    // The negative entry expires after a few seconds.
    t.clock.advance(5_001)
    await introspect(unknown)
    expect(t.queries.count - after).toBe(1)
  })

  it('makes a revocation through this server effective at once', async () => {
    for (let i = 0; i < 10; i++) {
      const tok = await newToken()
      expect((await introspect(tok.token)).json()).toMatchObject({ active: true })
      const revoke = await t.app.inject({
        method: 'POST',
        url: '/oauth/revoke',
        headers: { authorization: basicAuth(app.clientId, app.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
        payload: `token=${tok.token}`,
      })
      expect(revoke.statusCode).toBe(200)
      expect((await introspect(tok.token)).body).toBe('{"active":false}')
    }
  })

  it('drops a token when a NOTIFY from another process names it', async () => {
    const tok = await newToken()
    expect((await introspect(tok.token)).json()).toMatchObject({ active: true })
    // Another process revoked it: the row changes and the notice arrives only through Postgres.
    await t.db.updateTable('access_tokens').set({ revoked_at: new Date() }).where('token_hash', '=', tok.digest).execute()
    expect((await introspect(tok.token)).json()).toMatchObject({ active: true })
    await sql`select pg_notify(${REVOCATION_CHANNEL}, ${tok.digest})`.execute(t.db)
    await expect.poll(async () => (await introspect(tok.token)).body, { interval: 10 }).toBe('{"active":false}')
  })

  it('drops every token of a user for an application on "Revoke access"', async () => {
    const [a, b] = [await newToken(), await newToken()]
    const other = await createTokenSetup(t.db)
    for (const tok of [a, b, other.token]) expect((await introspect(tok.token)).json()).toMatchObject({ active: true })
    await revoke(t.revocation, { kind: 'access-revoked', userId: user.id, applicationId: app.id }, new Date())
    expect((await introspect(a.token)).body).toBe('{"active":false}')
    expect((await introspect(b.token)).body).toBe('{"active":false}')
    expect((await introspect(other.token.token)).json()).toMatchObject({ active: true })
  })

  it('holds a token whose notice was lost no longer than the TTL', async () => {
    // A user and application of its own: the test before revoked the shared pair's access, and
    // until that revocation's NOTIFY comes back the cache keeps none of the pair's tokens (a
    // local announcement awaits its confirmation), which on a busy machine can outlast the
    // first lookup here.
    const tok = (await createTokenSetup(t.db)).token
    expect((await introspect(tok.token)).json()).toMatchObject({ active: true })
    await t.db.updateTable('access_tokens').set({ revoked_at: new Date() }).where('token_hash', '=', tok.digest).execute()
    t.clock.advance(t.config.tokenCacheTtlMs - 1)
    expect((await introspect(tok.token)).json()).toMatchObject({ active: true })
    t.clock.advance(1)
    expect((await introspect(tok.token)).body).toBe('{"active":false}')
  })
})

describe('client authentication cache', () => {
  it('refuses an old secret once the console announces its regeneration, and accepts the new one at once', async () => {
    const client = await createApplication(t.db)
    const tok = await newToken()
    expect((await introspect(tok.token, client)).statusCode).toBe(200)

    const newSecret = generateClientSecret()
    await t.db
      .updateTable('applications')
      .set({ secret_hash: sha256Hex(newSecret) })
      .where('id', '=', client.id)
      .execute()
    // Until the notice, the cached digest still answers (bounded by the TTL).
    expect((await introspect(tok.token, client)).statusCode).toBe(200)
    await revoke(t.revocation, { kind: 'client-changed', clientId: client.clientId }, new Date())
    expect((await introspect(tok.token, client)).statusCode).toBe(401)
    expect((await introspect(tok.token, { ...client, clientSecret: newSecret })).statusCode).toBe(200)
  })

  it('accepts a new secret even before any notice', async () => {
    const client = await createApplication(t.db)
    const tok = await newToken()
    expect((await introspect(tok.token, client)).statusCode).toBe(200)
    const newSecret = generateClientSecret()
    await t.db
      .updateTable('applications')
      .set({ secret_hash: sha256Hex(newSecret) })
      .where('id', '=', client.id)
      .execute()
    expect((await introspect(tok.token, { ...client, clientSecret: newSecret })).statusCode).toBe(200)
    expect((await introspect(tok.token, client)).statusCode).toBe(401)
  })

  it('forgets a deleted application: its credentials and its tokens', async () => {
    const owner = await createUser(t.db)
    const doomed = await createApplication(t.db, { ownerId: owner.id })
    const tok = await createAccessToken(t.db, { userId: owner.id, applicationId: doomed.id })
    expect((await introspect(tok.token, doomed)).json()).toMatchObject({ active: true })
    expect(await deleteApplication(t.db, t.deps.bus, doomed.id, owner.id, t.clock(), t.deps.audit.trail(owner.id, null))).toBe(true)
    expect((await introspect(tok.token, doomed)).statusCode).toBe(401)
    expect((await introspect(tok.token)).body).toBe('{"active":false}')
  })
})
