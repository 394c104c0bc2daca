import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SESSION_CACHE_TTL_MS } from '../../../src/accounts/sessions/session-cache.js'
import { LAST_SEEN_GRANULARITY_MS } from '../../../src/accounts/sessions/sessions.js'
import { TEST_ISSUER, type TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { enrolTotp } from '../../helpers/totp.js'
import { consentedUser, oauthTestFile } from '../../helpers/oauth-set-up.js'
import { type TestClient, authorizeUrl, buildOAuthTestApp, createClient, locationParams, loggedInUser } from './helpers.js'

/*
 * Remembered consent with the session from this process's cache (src/accounts/sessions/session-cache.ts,
 * docs/decisions/004-caching-and-ttl-bounds.md): one statement, which issues the code only while the session is live and the user's
 * checked values are the cached ones. Every change below is made in the database, as another
 * Gatehouse process would make it, so nothing reaches this process's cache.
 */

const { t } = oauthTestFile()

async function counted<T>(c: TestContext, fn: () => Promise<T>): Promise<{ result: T; queries: number }> {
  const before = c.queries.count
  const result = await fn()
  return { result, queries: c.queries.count - before }
}

async function warm(c: TestContext = t) {
  const client = await createClient(c.db)
  const s = await consentedUser(c.app, client, { scope: 'read' })
  const url = authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read', state: 'st' })
  expect(locationParams(await s.get(url)).get('code')).toMatch(/^gac_/)
  const user = await c.db.selectFrom('users').select('id').where('email', '=', s.email).executeTakeFirstOrThrow()
  return { client, s, url, userId: user.id }
}

const codesOf = async (c: TestContext, client: TestClient) =>
  (await c.db.selectFrom('authorization_codes').select('id').where('application_id', '=', client.id).execute()).length

describe('a cached session', () => {
  it('costs one statement and no session read while it is cached; after SESSION_CACHE_TTL_MS, the read again', async () => {
    const { s, url } = await warm()
    const hit = await counted(t, () => s.get(url))
    expect(locationParams(hit.result).get('code')).toMatch(/^gac_/)
    expect(hit.queries).toBe(1)
    t.clock.advance(SESSION_CACHE_TTL_MS)
    const expired = await counted(t, () => s.get(url))
    expect(locationParams(expired.result).get('code')).toMatch(/^gac_/)
    // The session read, the application's (its cache keeps it 5 seconds), and the statement.
    expect(expired.queries).toBe(3)
  })

  it('still marks the session seen: the read after the cache entry expires writes last_seen_at when it is stale', async () => {
    const { s, url, userId } = await warm()
    const seen = async () =>
      (await t.db.selectFrom('sessions').select('last_seen_at').where('user_id', '=', userId).executeTakeFirstOrThrow()).last_seen_at
    const first = await seen()
    t.clock.advance(LAST_SEEN_GRANULARITY_MS + SESSION_CACHE_TTL_MS)
    expect((await s.get(url)).statusCode).toBe(302)
    expect((await seen()).getTime()).toBe(first.getTime() + LAST_SEEN_GRANULARITY_MS + SESSION_CACHE_TTL_MS)
  })

  it('logged out in another process: no code, the log-in page', async () => {
    const { client, s, url, userId } = await warm()
    const before = await codesOf(t, client)
    await t.db.deleteFrom('sessions').where('user_id', '=', userId).execute()
    const res = await s.get(url)
    expect(res.statusCode).toBe(303)
    expect(String(res.headers.location)).toMatch(/^\/login\?next=/)
    expect(await codesOf(t, client)).toBe(before)
  })

  it('logged out here: the cache forgets the session at once', async () => {
    const { client, s, url } = await warm()
    const before = await codesOf(t, client)
    expect((await s.post('/logout', {})).statusCode).toBe(303)
    const res = await s.get(url)
    expect(res.statusCode).toBe(303)
    expect(String(res.headers.location)).toMatch(/^\/login/)
    expect(await codesOf(t, client)).toBe(before)
  })

  it('expired since it was cached: no code, the log-in page', async () => {
    const { client, s, url, userId } = await warm()
    const before = await codesOf(t, client)
    await t.db
      .updateTable('sessions')
      .set({ expires_at: new Date(t.clock().getTime() + 1000) })
      .where('user_id', '=', userId)
      .execute()
    t.clock.advance(1000)
    const res = await s.get(url)
    expect(res.statusCode).toBe(303)
    expect(await codesOf(t, client)).toBe(before)
  })

  it('user suspended in another process: no code', async () => {
    const { client, s, url, userId } = await warm()
    const before = await codesOf(t, client)
    await t.db.updateTable('users').set({ suspended_at: t.clock() }).where('id', '=', userId).execute()
    const res = await s.get(url)
    expect(res.statusCode).toBe(303)
    expect(await codesOf(t, client)).toBe(before)
  })

  it('user changed elsewhere (their address): the session is read again, then the code: three statements', async () => {
    const { s, url, userId } = await warm()
    await t.db
      .updateTable('users')
      .set({ email: `changed-${userId}@example.com` })
      .where('id', '=', userId)
      .execute()
    const { result, queries } = await counted(t, () => s.get(url))
    expect(locationParams(result).get('code')).toMatch(/^gac_/)
    expect(queries).toBe(3)
    expect((await counted(t, () => s.get(url))).queries).toBe(1)
  })

  it('user changed elsewhere after each of the reads: after two reads, the 409 page and no code', async () => {
    const { client, s, url, userId } = await warm()
    const before = await codesOf(t, client)
    let changes = 0
    const changeAddress = () =>
      t.db
        .updateTable('users')
        .set({ email: `changed-${++changes}-${userId}@example.com` })
        .where('id', '=', userId)
        .execute()
    await changeAddress()
    // Each time the app has read the session, the address changes before its next statement.
    // PGlite's one connection is the app's until the hook returns: the change waits for it,
    // first in line, ahead of the app's next statement.
    const pending: Promise<unknown>[] = []
    t.queries.afterQuery = async (rows) => {
      if (rows.length !== 1 || !('amr' in rows[0]!) || !('email' in rows[0]!)) return
      const change = changeAddress()
      pending.push(change)
      if (t.testDb.handle.kind === 'postgres') await change
    }
    try {
      const { result, queries } = await counted(t, () => s.get(url))
      expect(result.statusCode).toBe(409)
      expect(result.body).toContain('Your session changed while this request was answered. Try again.')
      // The cached statement, then twice a read of the session and the statement again (the
      // application's settings are cached: no read of them).
      expect(queries).toBe(5)
    } finally {
      t.queries.afterQuery = undefined
      await Promise.all(pending)
    }
    expect(changes).toBe(3)
    expect(await codesOf(t, client)).toBe(before)
    // The address settles: the next request reads the session again and gets its code.
    const settled = await s.get(url)
    expect(locationParams(settled).get('code')).toMatch(/^gac_/)
  })

  it('consent forgotten: the consent page from a statement that found the session live, without reading it again', async () => {
    const { client, s, url } = await warm()
    await t.db.deleteFrom('grants').where('application_id', '=', client.id).execute()
    const { result, queries } = await counted(t, () => s.get(url))
    expect(result.statusCode).toBe(200)
    expect(result.body).toMatch(/<form method="post" action="\/oauth\/authorize">/)
    // The remembered-consent attempt, the fresh application read, and the held request's insert.
    expect(queries).toBe(3)
  })

  it('a request the one statement cannot answer reads the session first: the consent page for new scopes', async () => {
    const { s, client, userId } = await warm()
    await t.db.deleteFrom('sessions').where('user_id', '=', userId).execute()
    const res = await s.get(authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read write', state: 'st' }))
    expect(res.statusCode).toBe(303)
    expect(String(res.headers.location)).toMatch(/^\/login/)
  })
})

describe('SESSION_CACHE_MAX_ENTRIES=0', () => {
  let off: TestContext
  beforeAll(async () => {
    off = await buildOAuthTestApp({ SESSION_CACHE_MAX_ENTRIES: '0' })
  })
  afterAll(async () => {
    await off.close()
  })

  it('reads the session every time: two statements', async () => {
    const { s, url } = await warm(off)
    const { result, queries } = await counted(off, () => s.get(url))
    expect(locationParams(result).get('code')).toMatch(/^gac_/)
    expect(queries).toBe(2)
  })
})

describe('REQUIRE_TWO_FACTOR=all and a cached session', () => {
  let strict: TestContext
  beforeAll(async () => {
    strict = await buildOAuthTestApp({ REQUIRE_TWO_FACTOR: 'all' })
  })
  afterAll(async () => {
    await strict.close()
  })

  it('second factor removed in another process: the enrolment page, no code', async () => {
    const client = await createClient(strict.db)
    const s = await loggedInUser(strict.app)
    const { id: userId } = await strict.db.selectFrom('users').select('id').where('email', '=', s.email).executeTakeFirstOrThrow()
    // As if enrolled in this session: the policy reads users.second_factor and the session's amr
    // (src/accounts/second-factor/policy.ts usedSecondFactor).
    await strict.db.updateTable('users').set({ second_factor: true }).where('id', '=', userId).execute()
    await strict.db
      .updateTable('sessions')
      .set({ amr: ['pwd', 'otp', 'mfa'] })
      .where('user_id', '=', userId)
      .execute()
    const now = strict.clock()
    await strict.db
      .insertInto('grants')
      .values({ user_id: userId, application_id: client.id, scopes: ['read'], created_at: now, updated_at: now })
      .execute()
    const url = authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read', state: 'st' })
    expect(locationParams(await s.get(url)).get('code')).toMatch(/^gac_/)
    expect((await counted(strict, () => s.get(url))).queries).toBe(1)
    const before = await codesOf(strict, client)
    await strict.db.updateTable('users').set({ second_factor: false }).where('id', '=', userId).execute()
    const res = await s.get(url)
    expect(res.statusCode).toBe(403)
    expect(res.body).toMatch(/Set up a second factor first/)
    expect(await codesOf(strict, client)).toBe(before)
  })
})

describe('REQUIRE_TWO_FACTOR=all and the remembered-consent path', () => {
  let strict: TestContext
  beforeAll(async () => {
    strict = await buildOAuthTestApp({ REQUIRE_TWO_FACTOR: 'all' })
  })
  afterAll(async () => {
    await strict.close()
  })

  /** A user who granted the client `read` before, and the client in the application cache. */
  async function grantedWithCacheWarm(enrol: boolean) {
    const client = await createClient(strict.db)
    const s = await loggedInUser(strict.app)
    if (enrol) await enrolTotp(s, () => strict.clock())
    const { id: userId } = await strict.db.selectFrom('users').select('id').where('email', '=', s.email).executeTakeFirstOrThrow()
    const now = strict.clock()
    await strict.db
      .insertInto('grants')
      .values({ user_id: userId, application_id: client.id, scopes: ['read'], created_at: now, updated_at: now })
      .execute()
    const url = authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read', state: 'st', prompt: 'none' })
    // Anyone's request loads the client into the application cache (a visitor gets login_required,
    // on a page since nobody vouches for the client).
    expect((await new BrowserSession(strict.app).get(url)).statusCode).toBe(400)
    return { client, s, url }
  }

  it('prompt=none for a user without a second factor: interaction_required with state and iss, no code', async () => {
    const { client, s, url } = await grantedWithCacheWarm(false)
    const before = await codesOf(strict, client)
    for (let i = 0; i < 2; i++) {
      const res = await s.get(url)
      expect(res.statusCode).toBe(302)
      const params = locationParams(res)
      expect(params.get('error')).toBe('interaction_required')
      expect(params.get('state')).toBe('st')
      expect(params.get('iss')).toBe(TEST_ISSUER)
      expect(params.get('code')).toBeNull()
    }
    expect(await codesOf(strict, client)).toBe(before)
    // Without prompt=none, the page that says why.
    const page = await s.get(url.replace('&prompt=none', ''))
    expect(page.statusCode).toBe(403)
    expect(page.body).toContain('Set up a second factor first')
  })

  it('prompt=none for a user with a second factor: a code', async () => {
    const { s, url } = await grantedWithCacheWarm(true)
    expect(locationParams(await s.get(url)).get('code')).toMatch(/^gac_/)
  })
})
