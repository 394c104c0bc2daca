import { sha256Hex } from '../../../src/lib/crypto.js'
import { describe, expect, it } from 'vitest'
import { CHALLENGE, TEST_ISSUER, VERIFIER, type TestClient, authorizeUrl, createClient, exchange, locationParams } from './helpers.js'
import { consentedUser, oauthTestFile } from '../../helpers/oauth-set-up.js'

/*
 * GET /oauth/authorize with remembered consent is a hot path: one statement, with the
 * application and the session from caches that every other answer bypasses
 * (authorize-session-cache.test.ts has the session's).
 */

const { t } = oauthTestFile()

const db = () => t.db

const consented = (client: TestClient, scope = 'read write') => consentedUser(t.app, client, { scope })

async function counted<T>(fn: () => Promise<T>): Promise<{ result: T; queries: number; transactions: number }> {
  const before = { queries: t.queries.count, transactions: t.queries.transactions }
  const result = await fn()
  return { result, queries: t.queries.count - before.queries, transactions: t.queries.transactions - before.transactions }
}

describe('remembered consent, the hot path', () => {
  it('costs one statement, no transaction, once the application and the session are cached', async () => {
    const client = await createClient(db())
    const s = await consented(client)
    const url = authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read', state: 's1' })
    expect((await s.get(url)).statusCode).toBe(302)
    const { result: res, queries, transactions } = await counted(() => s.get(url))
    expect(res.statusCode).toBe(302)
    expect(locationParams(res).get('code')).toMatch(/^gac_/)
    expect(queries).toBe(1)
    expect(transactions).toBe(0)
    expect(res.headers['set-cookie']).toBeUndefined()
  })

  it('binds the code to client, user, scopes, redirect_uri and PKCE, for 10 minutes, with state and iss', async () => {
    const client = await createClient(db(), { redirectUris: ['https://client.example/cb'] })
    const s = await consented(client, 'read write_teams')
    const sent = 'https://client.example/cb/deeper?tab=1'
    const url = authorizeUrl({
      response_type: 'code',
      client_id: client.clientId,
      redirect_uri: sent,
      scope: 'write_teams',
      state: 'a b',
      code_challenge: CHALLENGE,
      code_challenge_method: 'S256',
    })
    await s.get(url)
    const res = await s.get(url)
    expect(res.statusCode).toBe(302)
    expect(String(res.headers.location)).toMatch(/^https:\/\/client\.example\/cb\/deeper\?tab=1&code=gac_/)
    const p = locationParams(res)
    expect(p.get('state')).toBe('a b')
    expect(p.get('iss')).toBe(TEST_ISSUER)
    const code = p.get('code')!
    const user = await db().selectFrom('users').select('id').where('email', '=', s.email).executeTakeFirstOrThrow()
    const row = await db().selectFrom('authorization_codes').selectAll().where('code_hash', '=', sha256Hex(code)).executeTakeFirstOrThrow()
    expect(row).toMatchObject({
      application_id: client.id,
      user_id: user.id,
      scopes: ['write_teams'],
      redirect_uri: sent,
      code_challenge: CHALLENGE,
      code_challenge_method: 'S256',
      consumed_at: null,
    })
    expect(row.expires_at.getTime() - row.created_at.getTime()).toBe(10 * 60_000)
    expect((await exchange(t.app, client, { code, redirect_uri: sent })).statusCode).toBe(400)
    const other = locationParams(await s.get(url)).get('code')!
    const token = await exchange(t.app, client, { code: other, redirect_uri: sent, code_verifier: VERIFIER })
    expect(token.statusCode, token.body).toBe(200)
    expect(token.json().scope).toBe('write_teams')
  })

  it('asks again for scopes beyond the grant, for prompt=consent, and never for the token flow', async () => {
    const client = await createClient(db(), { allowImplicit: true })
    const s = await consented(client, 'read')
    const url = (extra: Record<string, string>) => authorizeUrl({ response_type: 'code', client_id: client.clientId, ...extra })
    expect((await s.get(url({ scope: 'read' }))).statusCode).toBe(302)
    expect((await s.get(url({ scope: 'read write' }))).statusCode).toBe(200)
    expect((await s.get(url({ scope: 'read', prompt: 'consent' }))).statusCode).toBe(200)
    expect((await s.get(url({ scope: 'read', response_type: 'token' }))).statusCode).toBe(200)
    expect(locationParams(await s.get(url({ scope: 'read', prompt: 'none' }))).get('code')).toMatch(/^gac_/)
    expect(locationParams(await s.get(url({ scope: 'write', prompt: 'none' }))).get('error')).toBe('consent_required')
  })
})

describe('a cached application never outlives a change', () => {
  async function warm() {
    const client = await createClient(db())
    const s = await consented(client)
    const url = authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: client.redirectUri, scope: 'read' })
    expect((await s.get(url)).statusCode).toBe(302)
    return { client, s, url }
  }
  const codes = async (applicationId: string) =>
    Number(
      (
        await db()
          .selectFrom('authorization_codes')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('application_id', '=', applicationId)
          .executeTakeFirstOrThrow()
      ).n,
    )

  it('redirect URI removed: the error page, no code', async () => {
    const { client, s, url } = await warm()
    const before = await codes(client.id)
    await db()
      .updateTable('applications')
      .set({ redirect_uris: ['https://elsewhere.example/cb'] })
      .where('id', '=', client.id)
      .execute()
    const res = await s.get(url)
    expect(res.statusCode).toBe(400)
    expect(res.headers.location).toBeUndefined()
    expect(res.body).toMatch(/not covered/)
    expect(await codes(client.id)).toBe(before)
  })

  it('PKCE now required, or the scope no longer allowed: the error goes to the client', async () => {
    const { client, s, url } = await warm()
    await db().updateTable('applications').set({ require_pkce: true }).where('id', '=', client.id).execute()
    expect(locationParams(await s.get(url)).get('error')).toBe('invalid_request')
    await db()
      .updateTable('applications')
      .set({ require_pkce: false, allowed_scopes: ['write'] })
      .where('id', '=', client.id)
      .execute()
    expect(locationParams(await s.get(url)).get('error')).toBe('invalid_scope')
    await db()
      .updateTable('applications')
      .set({ allowed_scopes: ['read', 'write'] })
      .where('id', '=', client.id)
      .execute()
    expect(locationParams(await s.get(url)).get('code')).toMatch(/^gac_/)
  })

  it('application deleted: the error page', async () => {
    const { client, s, url } = await warm()
    await db().deleteFrom('applications').where('id', '=', client.id).execute()
    const res = await s.get(url)
    expect(res.statusCode).toBe(400)
    expect(res.body).toMatch(/No application/)
  })

  it('consent forgotten: the consent page, with one more round trip than before to hold the request', async () => {
    const { client, s, url } = await warm()
    await db().deleteFrom('grants').where('application_id', '=', client.id).execute()
    const { result: res, queries } = await counted(() => s.get(url))
    expect(res.statusCode).toBe(200)
    expect(res.body).toMatch(/<form method="post" action="\/oauth\/authorize">/)
    // The remembered-consent attempt, the fresh read, and the held request's insert.
    expect(queries).toBeLessThanOrEqual(3)
  })
})
