import type { LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestContext } from '../../helpers/app.js'
import { TEST_ISSUER, buildOAuthTestApp, type TestClient, authorizeUrl, createClient, locationParams, loggedInUser } from './helpers.js'
import { consentedUser, oauthTestFile } from '../../helpers/oauth-set-up.js'

/*
 * The OpenID Connect request parameters of GET /oauth/authorize (OpenID Connect Core 3.1.2.1):
 * prompt, max_age, login_hint, and request objects refused (3.1.2.6), docs/oauth-endpoints.md "Silent sign-in and fresh log-ins (`prompt`, `max_age`, `login_hint`)".
 */

const { t } = oauthTestFile()

const PASSWORD = 'correct horse battery'

const consented = (client: TestClient) => consentedUser(t.app, client, { scope: 'read' })

async function verifiedClient(): Promise<TestClient> {
  const client = await createClient(t.db)
  await t.db.updateTable('applications').set({ verified_at: new Date() }).where('id', '=', client.id).execute()
  return client
}

const code = (client: TestClient, extra: Record<string, string | undefined> = {}) =>
  authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read', state: 'st', ...extra })

function loginRedirect(res: LightMyRequestResponse): URL {
  expect(res.statusCode).toBe(303)
  const location = new URL(String(res.headers.location), 'https://gatehouse.test')
  expect(location.pathname).toBe('/login')
  return location
}

const errorOf = (res: LightMyRequestResponse) => {
  expect(res.statusCode).toBe(302)
  return locationParams(res).get('error')
}

describe('prompt=login and select_account', () => {
  it('shows the log-in form over the session, and the log-in after it answers the request', async () => {
    for (const prompt of ['login', 'select_account', 'login consent']) {
      const client = await createClient(t.db)
      const s = await consented(client)
      t.clock.advance(1000)
      const login = loginRedirect(await s.get(code(client, { prompt })))
      expect(login.searchParams.get('fresh')).toBe('1')
      const next = login.searchParams.get('next')!
      expect(new URLSearchParams(next.split('?')[1]).get('gatehouse_login_asked')).toBe(String(t.clock().getTime()))
      // Back before logging in again: the session is older than the request's asking, so log in.
      loginRedirect(await s.get(next))
      const form = await s.get(`${login.pathname}${login.search}`)
      expect(form.statusCode).toBe(200)
      t.clock.advance(1000)
      const done = await s.post('/login', { email: s.email, password: PASSWORD, next })
      expect(done.headers.location).toBe(next)
      const answer = await s.get(next)
      if (prompt === 'login consent') expect(answer.statusCode).toBe(200)
      else expect(locationParams(answer).get('code')).toMatch(/^gac_/)
    }
  })

  it('a logged-out user logs in once and the request ends', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    await s.post('/logout', {})
    const login = loginRedirect(await s.get(code(client, { prompt: 'login' })))
    expect(login.searchParams.get('fresh')).toBeNull()
    const next = login.searchParams.get('next')!
    await s.get(`${login.pathname}${login.search}`)
    await s.post('/login', { email: s.email, password: PASSWORD, next })
    expect(locationParams(await s.get(next)).get('code')).toMatch(/^gac_/)
  })

  it('refuses a forged asking time that is not a number', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    const res = await s.get(code(client, { prompt: 'login', gatehouse_login_asked: 'soon' }))
    expect(errorOf(res)).toBe('invalid_request')
  })
})

describe('max_age', () => {
  it('accepts a session exactly max_age old and asks for a log-in one millisecond later', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    const user = await t.db.selectFrom('users').select('id').where('email', '=', s.email).executeTakeFirstOrThrow()
    const session = await t.db
      .selectFrom('sessions')
      .select('authenticated_at')
      .where('user_id', '=', user.id)
      .orderBy('authenticated_at', 'desc')
      .executeTakeFirstOrThrow()
    t.clock.set(new Date(session.authenticated_at.getTime() + 60_000))
    expect(locationParams(await s.get(code(client, { max_age: '60' }))).get('code')).toMatch(/^gac_/)
    t.clock.advance(1)
    expect(errorOf(await s.get(code(client, { max_age: '60', prompt: 'none' })))).toBe('login_required')
    const login = loginRedirect(await s.get(code(client, { max_age: '60' })))
    expect(login.searchParams.get('fresh')).toBe('1')
    const next = login.searchParams.get('next')!
    await s.get(`${login.pathname}${login.search}`)
    await s.post('/login', { email: s.email, password: PASSWORD, next })
    expect(locationParams(await s.get(next)).get('code')).toMatch(/^gac_/)
  })

  it('max_age=0 asks every time, and the log-in it asked for ends the request', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    t.clock.advance(1)
    const login = loginRedirect(await s.get(code(client, { max_age: '0' })))
    const next = login.searchParams.get('next')!
    await s.get(`${login.pathname}${login.search}`)
    await s.post('/login', { email: s.email, password: PASSWORD, next })
    expect(locationParams(await s.get(next)).get('code')).toMatch(/^gac_/)
  })

  it('refuses what is not a non-negative integer', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    for (const maxAge of ['-1', '1.5', 'abc', '1e3', '9999999999999999', ' 5']) {
      const res = await s.get(code(client, { max_age: maxAge }))
      expect(errorOf(res), maxAge).toBe('invalid_request')
      expect(locationParams(res).get('state')).toBe('st')
    }
  })
})

describe('login_hint', () => {
  it('prefills the log-in form, escaped', async () => {
    const client = await createClient(t.db)
    for (const hint of ['someone@example.com', '"><script>alert(1)</script>']) {
      const login = loginRedirect(await t.app.inject(code(client, { login_hint: hint })))
      expect(login.searchParams.get('email')).toBe(hint)
      const page = await t.app.inject(`${login.pathname}${login.search}`)
      expect(page.statusCode).toBe(200)
      expect(page.body).not.toContain('<script>alert(1)')
      if (hint.startsWith('some')) expect(page.body).toContain('value="someone@example.com"')
    }
  })

  it('refuses a hint too long or with a control character, and never answers 500', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    expect(errorOf(await s.get(code(client, { login_hint: `${'a'.repeat(243)}@example.com` })))).toBe('invalid_request')
    expect(errorOf(await s.get(code(client, { login_hint: 'a\u0000b@example.com' })))).toBe('invalid_request')
    expect(errorOf(await s.get(code(client, { login_hint: 'a\u007fb@example.com' })))).toBe('invalid_request')
    expect(locationParams(await s.get(code(client, { login_hint: `${'a'.repeat(242)}@example.com` }))).get('code')).toMatch(/^gac_/)
  })
})

describe('prompt', () => {
  it('refuses unknown values and none with another', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    for (const prompt of ['bogus', 'none login', 'consent none', 'login bogus']) {
      expect(errorOf(await s.get(code(client, { prompt }))), prompt).toBe('invalid_request')
    }
  })

  it('prompt=consent shows the page despite a remembered grant', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    expect((await s.get(code(client, { prompt: 'consent' }))).statusCode).toBe(200)
  })
})

describe('prompt=none never shows a page', () => {
  it('answers a code with a session and a grant', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    expect(locationParams(await s.get(code(client, { prompt: 'none' }))).get('code')).toMatch(/^gac_/)
  })

  it('login_required for a verified application while logged out, with state and iss', async () => {
    const client = await verifiedClient()
    const res = await t.app.inject(code(client, { prompt: 'none' }))
    expect(errorOf(res)).toBe('login_required')
    expect(locationParams(res).get('state')).toBe('st')
    expect(locationParams(res).get('iss')).toBe(TEST_ISSUER)
  })

  it('consent_required for a verified application the user has not granted, and for the token flow', async () => {
    const client = await verifiedClient()
    await t.db.updateTable('applications').set({ allow_implicit: true }).where('id', '=', client.id).execute()
    const s = await loggedInUser(t.app)
    expect(errorOf(await s.get(code(client, { prompt: 'none' })))).toBe('consent_required')
    const token = await s.get(code(client, { prompt: 'none', response_type: 'token' }))
    expect(locationParams(token, 'fragment').get('error')).toBe('consent_required')
  })

  it('an unverified application without a grant gets the page that names the destination', async () => {
    const client = await createClient(t.db)
    const res = await t.app.inject(code(client, { prompt: 'none' }))
    expect(res.statusCode).toBe(400)
    expect(res.body).toContain('login_required')
  })
})

describe('request objects', () => {
  it('refuses request and request_uri with the OpenID Connect codes, like other errors', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    expect(errorOf(await s.get(code(client, { request: 'eyJhbGciOiJub25lIn0.e30.' })))).toBe('request_not_supported')
    expect(errorOf(await s.get(code(client, { request_uri: 'https://client.example/r' })))).toBe('request_uri_not_supported')
    // Without response_type, as a request object would carry it: still the request object's error.
    const bare = await s.get(authorizeUrl({ client_id: client.clientId, request: 'x' }))
    expect(errorOf(bare)).toBe('request_not_supported')
  })
})

describe('the hot path', () => {
  it('with max_age satisfied and a login_hint still costs one statement', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    const url = code(client, { max_age: '3600', login_hint: s.email })
    expect((await s.get(url)).statusCode).toBe(302)
    const before = t.queries.count
    const res = await s.get(url)
    expect(locationParams(res).get('code')).toMatch(/^gac_/)
    expect(t.queries.count - before).toBe(1)
  })
})

describe('a second factor to enrol first', () => {
  let strict: TestContext
  beforeAll(async () => {
    strict = await buildOAuthTestApp({ REQUIRE_TWO_FACTOR: 'all' })
  })
  afterAll(async () => {
    await strict.close()
  })

  it('prompt=none answers interaction_required; without it the enrolment page', async () => {
    const client = await createClient(strict.db)
    await strict.db.updateTable('applications').set({ verified_at: new Date() }).where('id', '=', client.id).execute()
    const s = await loggedInUser(strict.app)
    const url = authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read', state: 'st' })
    expect((await s.get(url)).statusCode).toBe(403)
    const res = await s.get(`${url}&prompt=none`)
    expect(res.statusCode).toBe(302)
    expect(locationParams(res).get('error')).toBe('interaction_required')
  })
})
