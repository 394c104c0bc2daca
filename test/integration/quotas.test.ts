import { sha256Hex } from '../../src/lib/crypto.js'
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../helpers/app.js'
import type { BrowserSession } from '../helpers/browser-session.js'
import { applicationForm } from '../helpers/console.js'
import { createAccessToken, createUser } from '../helpers/factories.js'
import { captureLog } from '../helpers/capture-log.js'
import { until } from '../helpers/oauth-load.js'
import { NOTICE_WAIT_MS } from '../helpers/propagation.js'
import { type TestClient, authorizeUrl, consentFields, createClient, exchange, locationParams, loggedInUser } from './oauth/helpers.js'
import { consentedUser, oauthTestFile } from '../helpers/oauth-set-up.js'

/*
 * docs/operating/limits.md: applications per user, live tokens per (user, application), and
 * authorization codes per (user, application) a minute, each at its default.
 */

const { t } = oauthTestFile()

const consented = (client: TestClient) => consentedUser(t.app, client, { redirect_uri: client.redirectUri })

/** Remembered consent, then the exchange: a new token for the (user, client). */
async function newToken(s: BrowserSession, client: TestClient, exchangedBy: TestContext = t): Promise<string> {
  const res = await s.get(authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: client.redirectUri }))
  expect(res.statusCode, res.body.slice(0, 200)).toBe(302)
  exchangedBy.clock.set(t.clock())
  const token = await exchange(exchangedBy.app, client, { code: locationParams(res).get('code')! })
  expect(token.statusCode, token.body).toBe(200)
  return token.json().access_token
}

async function active(client: TestClient, token: string, on: TestContext = t): Promise<boolean> {
  const res = await on.app.inject({
    method: 'POST',
    url: '/oauth/introspect',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ token, client_id: client.clientId, client_secret: client.clientSecret }).toString(),
  })
  expect(res.statusCode).toBe(200)
  return res.json().active
}

const tick = () => t.clock.advance(1000)

/** As stored, whatever any process's cache says. */
const revokedAt = async (token: string) =>
  (await t.db.selectFrom('access_tokens').select('revoked_at').where('token_hash', '=', sha256Hex(token)).executeTakeFirstOrThrow())
    .revoked_at

describe('applications per user (MAX_APPLICATIONS_PER_USER, default 25)', () => {
  it('refuses the 26th with a clear message and allows one again after a deletion', async () => {
    const s = await loggedInUser(t.app)
    await s.get('/applications/new')
    for (let i = 1; i <= 25; i++) {
      const res = await s.post('/applications', applicationForm({ name: `App ${i}` }))
      expect(res.statusCode, res.body.slice(0, 300)).toBe(200)
    }
    const refused = await s.post('/applications', applicationForm({ name: 'App 26' }))
    expect(refused.statusCode).toBe(409)
    expect(refused.body).toContain('You have 25 applications, the most one account may register.')
    const rows = await t.db
      .selectFrom('applications')
      .innerJoin('users', 'users.id', 'applications.owner_id')
      .where('users.email', '=', s.email)
    expect((await rows.select('applications.name').execute()).map((a) => a.name)).not.toContain('App 26')

    const list = await s.get('/applications')
    expect(list.body).toContain('the most one account may register')
    expect(list.body).not.toContain('href="/applications/new"')
    expect((await s.get('/applications/new')).body).toContain('the most one account may register')

    const one = await rows.select('applications.id').executeTakeFirstOrThrow()
    await s.get(`/applications/${one.id}`)
    expect((await s.post(`/applications/${one.id}/delete`, {})).statusCode).toBe(303)
    await s.get('/applications/new')
    expect((await s.post('/applications', applicationForm({ name: 'App 26' }))).statusCode).toBe(200)
  })

  it('lets registrations sent at once take only the places left', async () => {
    const s = await loggedInUser(t.app)
    await s.get('/applications/new')
    for (let i = 0; i < 23; i++) expect((await s.post('/applications', applicationForm())).statusCode).toBe(200)
    const statuses = await Promise.all(
      Array.from({ length: 5 }, () => s.post('/applications', applicationForm()).then((r) => r.statusCode)),
    )
    expect(statuses.filter((c) => c === 200)).toHaveLength(2)
    expect(statuses.filter((c) => c === 409)).toHaveLength(3)
  })
})

describe('live tokens per (user, application) (MAX_TOKENS_PER_GRANT, default 10)', () => {
  it('revokes the oldest when the 11th is issued: inactive at introspection, the others untouched', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    const other = await consented(client)
    const othersToken = await newToken(other, client)
    const tokens: string[] = []
    for (let i = 0; i < 10; i++) {
      tick()
      tokens.push(await newToken(s, client))
    }
    // Introspected (and so cached) while live: the revocation must reach the cache too.
    for (const token of tokens) expect(await active(client, token)).toBe(true)
    tick()
    tokens.push(await newToken(s, client))
    // Kept after the response is decided (src/revocation/token-quota.ts): wait for its statement.
    await t.deps.tokenQuota.settled()
    expect(await active(client, tokens[0]!)).toBe(false)
    for (const token of tokens.slice(1)) expect(await active(client, token)).toBe(true)
    expect(await active(client, othersToken)).toBe(true)

    tick()
    tokens.push(await newToken(s, client))
    await t.deps.tokenQuota.settled()
    expect(await active(client, tokens[1]!)).toBe(false)
    const live = await t.db
      .selectFrom('access_tokens')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('application_id', '=', client.id)
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow()
    expect(Number(live.n)).toBe(11) // ten for the user, one for the other user
    expect(await revokedAt(tokens[0]!)).not.toBeNull()
  })

  it('holds for the token flow as well', async () => {
    const client = await createClient(t.db, { allowImplicit: true })
    const s = await loggedInUser(t.app)
    const tokens: string[] = []
    for (let i = 0; i < 11; i++) {
      tick()
      const page = await s.get(authorizeUrl({ response_type: 'token', client_id: client.clientId, redirect_uri: client.redirectUri }))
      expect(page.statusCode).toBe(200)
      const res = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
      expect(res.statusCode).toBe(303)
      tokens.push(locationParams(res, 'fragment').get('access_token')!)
      if (i === 9) {
        await t.deps.tokenQuota.settled()
        for (const token of tokens) expect(await active(client, token)).toBe(true)
      }
    }
    await t.deps.tokenQuota.settled()
    expect(await active(client, tokens[0]!)).toBe(false)
    for (const token of tokens.slice(1)) expect(await active(client, token)).toBe(true)
  })

  it('brings a grant above a lowered quota down to it at its next token', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    const lowered = await buildTestApp({ MAX_TOKENS_PER_GRANT: '3' }, t.testDb)
    try {
      const tokens: string[] = []
      for (let i = 0; i < 8; i++) {
        tick()
        tokens.push(await newToken(s, client))
      }
      await t.deps.tokenQuota.settled()
      // The same grant's next token, issued by a process whose quota is 3 (a lowered setting).
      tick()
      tokens.push(await newToken(s, client, lowered))
      await lowered.deps.tokenQuota.settled()
      const states = await Promise.all(tokens.map((token) => active(client, token, lowered)))
      expect(states).toEqual([false, false, false, false, false, false, true, true, true])
    } finally {
      await lowered.close()
    }
  })

  it('keeps many grants issued at once within the quota, more than one statement holds', async () => {
    const client = await createClient(t.db)
    const salt = Math.random().toString(36).slice(2)
    // 1,200 grants of 11 live tokens each, the first the oldest: each must lose exactly that one.
    const users = await sql<{ id: string }>`
      insert into users (email, password_hash, created_at)
      select 'bulk-' || g || '-' || ${salt} || '@example.com', 'unused', now() from generate_series(1, 1200) as g
      returning id`.execute(t.db)
    await sql`
      insert into access_tokens (token_hash, application_id, user_id, scopes, created_at)
      select encode(sha256(convert_to(u.id::text || ':' || i, 'UTF8')), 'hex'), ${client.id}::uuid, u.id, '{read}',
             ${t.clock()}::timestamptz + i * interval '1 second'
      from users u cross join generate_series(1, 11) as i
      where u.email like ${`bulk-%-${salt}@example.com`}`.execute(t.db)
    const evictedBefore = t.deps.tokenQuota.evicted
    for (const { id } of users.rows) t.deps.tokenQuota.issued({ userId: id, applicationId: client.id })
    await t.deps.tokenQuota.settled()
    expect(t.deps.tokenQuota.evicted - evictedBefore).toBe(1200)
    const perUser = await sql<{ live: number; first_live: boolean }>`
      select count(*) filter (where revoked_at is null)::int as live,
             bool_or(revoked_at is null and created_at = ${t.clock()}::timestamptz + interval '1 second') as first_live
      from access_tokens where application_id = ${client.id}::uuid group by user_id`.execute(t.db)
    expect(perUser.rows).toHaveLength(1200)
    expect(perUser.rows.every((r) => r.live === 10 && !r.first_live)).toBe(true)
  })

  it('enforces what is pending before a process closes its database', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    const closing = await buildTestApp({ MAX_TOKENS_PER_GRANT: '1' }, t.testDb)
    const tokens: string[] = []
    try {
      for (let i = 0; i < 2; i++) {
        tick()
        tokens.push(await newToken(s, client, closing))
      }
    } finally {
      // Straight after the response, long before the 50 ms the statement waits for.
      await closing.close()
    }
    expect(await revokedAt(tokens[0]!)).not.toBeNull()
    expect(await active(client, tokens[1]!)).toBe(true)
  })

  it('survives a failed statement: logged and counted, and the excess goes at the next token', async () => {
    const log = captureLog()
    const two = await buildTestApp({ MAX_TOKENS_PER_GRANT: '2', LOG_LEVEL: 'warn' }, t.testDb, { logStream: log.stream })
    const client = await createClient(t.db)
    const s = await consented(client)
    const refuseRevocation = sql`alter table access_tokens add constraint quota_test_refuses check (revoked_at is null) not valid`
    try {
      const tokens: string[] = []
      for (let i = 0; i < 2; i++) {
        tick()
        tokens.push(await newToken(s, client, two))
      }
      // The first two tokens' enforcement (a real 50 ms timer) must be over before the refusal:
      // a run still pending could otherwise see the third token, fail, and count a second failure.
      await two.deps.tokenQuota.settled()
      await refuseRevocation.execute(t.db)
      try {
        tick()
        tokens.push(await newToken(s, client, two))
        await two.deps.tokenQuota.settled()
      } finally {
        await t.db.schema.alterTable('access_tokens').dropConstraint('quota_test_refuses').execute()
      }
      expect(two.deps.tokenQuota.failures).toBe(1)
      const warnings = log.lines.filter((l) => l.includes('MAX_TOKENS_PER_GRANT not enforced'))
      expect(warnings).toHaveLength(1)
      expect(JSON.parse(warnings[0]!)).toMatchObject({ level: 40, grants: 1, cause: expect.stringContaining('check constraint') })
      expect(await active(client, tokens[0]!, two)).toBe(true)

      tick()
      tokens.push(await newToken(s, client, two))
      await two.deps.tokenQuota.settled()
      // Asked of the process that revoked (another hears it through LISTEN, a moment later).
      expect(await Promise.all(tokens.map((token) => active(client, token, two)))).toEqual([false, false, true, true])
      expect(two.deps.tokenQuota.evicted).toBe(2)
      const metrics = (await two.app.inject('/metrics')).body
      expect(metrics).toMatch(/^gatehouse_tokens_evicted_total 2$/m)
      expect(metrics).toMatch(/^gatehouse_token_quota_failures_total 1$/m)
    } finally {
      await two.close()
    }
  })

  it('announces the revocation: another process on the database drops its cached answer', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    const second = await buildTestApp({}, t.testDb)
    try {
      const tokens: string[] = []
      for (let i = 0; i < 10; i++) {
        tick()
        tokens.push(await newToken(s, client))
      }
      expect(await active(client, tokens[0]!, second)).toBe(true)
      tick()
      await newToken(s, client)
      await until(async () => !(await active(client, tokens[0]!, second)), NOTICE_WAIT_MS, 'the other process drops the evicted token')
    } finally {
      await second.close()
    }
  })
  it('announces a statement of more digests than one notice holds, in notices another process reads', async () => {
    // Three grants, 70 live tokens each: one flush revokes 60 of each, 180 digests, more than one
    // NOTIFY payload may hold (8,000 bytes): two notices of at most MAX_DIGESTS_PER_NOTICE, sent
    // by the one statement that revokes them.
    const client = await createClient(t.db)
    const second = await buildTestApp({}, t.testDb)
    try {
      const grants = [(await createUser(t.db)).id, (await createUser(t.db)).id, (await createUser(t.db)).id].map((userId) => ({
        userId,
        applicationId: client.id,
      }))
      const issued: string[][] = []
      for (const grant of grants) {
        const tokens: string[] = []
        for (let i = 0; i < 70; i++) {
          tokens.push((await createAccessToken(t.db, { ...grant, now: new Date(t.clock().getTime() - (70 - i) * 1000) })).token)
        }
        issued.push(tokens)
      }
      const watched = issued.flatMap((tokens) => [tokens[0]!, tokens[30]!, tokens[59]!])
      for (const token of watched) expect(await active(client, token, second)).toBe(true)
      const before = t.deps.tokenQuota.evicted
      for (const grant of grants) t.deps.tokenQuota.issued(grant)
      await t.deps.tokenQuota.settled()
      expect(t.deps.tokenQuota.evicted - before).toBe(180)
      for (const token of watched) {
        await until(async () => !(await active(client, token, second)), NOTICE_WAIT_MS, 'the other process drops each evicted token')
      }
      for (const tokens of issued) expect(await active(client, tokens[60]!, second)).toBe(true)
    } finally {
      await second.close()
    }
  })
})

describe('authorization codes per (user, application) a minute (CODE_ISSUE_LIMIT, default 60)', () => {
  it('answers the 61st with temporarily_unavailable, and issues again once the minute has passed', async () => {
    const client = await createClient(t.db)
    const s = await consented(client) // the consent issued the first code
    const url = authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: client.redirectUri, state: 'xyz' })
    for (let i = 2; i <= 60; i++) {
      const res = await s.get(url)
      expect(res.statusCode).toBe(302)
      expect(locationParams(res).get('code')).toMatch(/^gac_/)
    }
    const refused = await s.get(url)
    expect(refused.statusCode).toBe(302)
    const params = locationParams(refused)
    expect(params.get('error')).toBe('temporarily_unavailable')
    expect(params.get('state')).toBe('xyz')
    expect(params.get('code')).toBeNull()

    // Another user of the same client is not affected.
    const other = await consented(client)
    expect(locationParams(await other.get(url)).get('code')).toMatch(/^gac_/)

    // A consent page answered meanwhile is refused the same way, and issues nothing.
    const page = await s.get(authorizeUrl({ response_type: 'code', client_id: client.clientId, prompt: 'consent' }))
    expect(page.statusCode).toBe(200)
    const approved = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
    expect(locationParams(approved).get('error')).toBe('temporarily_unavailable')

    t.clock.advance(61_000)
    const again = await s.get(url)
    expect(locationParams(again).get('code')).toMatch(/^gac_/)
  })
})
