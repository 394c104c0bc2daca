import { describe, expect, it } from 'vitest'
import { BrowserSession } from '../../helpers/browser-session.js'
import { TEST_ISSUER, authorizeUrl, consentFields, createClient, exchange, locationParams, loggedInUser, tokenRow } from './helpers.js'
import { oauthClientTestFile } from '../../helpers/oauth-set-up.js'

const { t, client } = oauthClientTestFile({ name: 'Team <Planner>', redirectUris: ['https://client.example/cb'], allowImplicit: true })

const codeRequest = (extra: Record<string, string> = {}) =>
  authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: client.redirectUri, state: 'xyz', ...extra })

describe('log-in first', () => {
  it('sends a logged-out browser to the log-in page and then back to the same request', async () => {
    const s = await loggedInUser(t.app)
    const email = s.email
    const browser = new BrowserSession(t.app)
    const url = codeRequest({ scope: 'read write' })
    const res = await browser.get(url)
    expect(res.statusCode).toBe(303)
    const login = String(res.headers.location)
    expect(login).toBe(`/login?next=${encodeURIComponent(url)}`)
    const page = await browser.get(login)
    expect(page.body).toMatch(/href="\/signup\?next=/)
    expect(page.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/)
    expect(page.headers['x-frame-options']).toBe('DENY')
    expect(page.headers['referrer-policy']).toBe('same-origin')
    expect(page.headers['cache-control']).toBe('no-store')
    const back = await browser.logIn(email, undefined, url)
    expect(back.headers.location).toBe(url)
    const consent = await browser.get(url)
    expect(consent.statusCode).toBe(200)
    expect(consent.body).toMatch(/Authorize Team &lt;Planner&gt;/)
  })
})

describe('consent page', () => {
  it('shows the application, the redirect host and the scopes in plain words, unframeable and uncached', async () => {
    const s = await loggedInUser(t.app)
    const res = await s.get(codeRequest({ scope: 'read write_teams' }))
    expect(res.statusCode).toBe(200)
    const owner = await t.db
      .selectFrom('applications')
      .innerJoin('users', 'users.id', 'applications.owner_id')
      .select('users.email')
      .where('applications.id', '=', client.id)
      .executeTakeFirstOrThrow()
    // An unverified email is anyone's claim: no owner line until its owner verified it (docs/accounts.md "Email verification").
    expect(res.body).not.toContain(owner.email)
    expect(res.body).not.toContain('Registered by')
    expect(res.body).toContain('Gatehouse has not verified this application.')
    expect(res.body).toContain('client.example')
    expect(res.body).toContain('See your data')
    expect(res.body).toContain('Change team information')
    expect(res.body).toMatch(/<button type="submit" name="decision" value="approve">Authorize<\/button>/)
    expect(res.body).toMatch(/value="deny"[^>]*>Deny<\/button>/)
    expect(res.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/)
    expect(res.headers['content-security-policy']).toMatch(/form-action 'self' https:\/\/client\.example:443/)
    expect(res.headers['x-frame-options']).toBe('DENY')
    expect(res.headers['referrer-policy']).toBe('same-origin')
    expect(res.headers['cache-control']).toBe('no-store')
  })

  it('issues a code bound to the request after Authorize, with a 303, state and iss', async () => {
    const s = await loggedInUser(t.app)
    const page = await s.get(codeRequest({ redirect_uri: 'https://client.example/cb/deeper?tab=1' }))
    const res = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
    expect(res.statusCode).toBe(303)
    expect(String(res.headers.location)).toMatch(/^https:\/\/client\.example\/cb\/deeper\?tab=1&code=gac_/)
    const p = locationParams(res)
    expect(p.get('state')).toBe('xyz')
    expect(p.get('iss')).toBe(TEST_ISSUER)
    const row = await t.db.selectFrom('authorization_codes').selectAll().orderBy('created_at', 'desc').executeTakeFirstOrThrow()
    expect(row).toMatchObject({
      application_id: client.id,
      scopes: ['read'],
      redirect_uri: 'https://client.example/cb/deeper?tab=1',
      consumed_at: null,
    })
    expect(row.expires_at.getTime() - row.created_at.getTime()).toBe(10 * 60_000)
  })

  it('answers Deny with access_denied', async () => {
    const s = await loggedInUser(t.app)
    const page = await s.get(codeRequest())
    const res = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'deny' })
    expect(res.statusCode).toBe(303)
    const p = locationParams(res)
    expect(p.get('error')).toBe('access_denied')
    expect(p.get('state')).toBe('xyz')
    expect(p.get('code')).toBeNull()
  })

  it('refuses a POST without the CSRF token', async () => {
    const s = await loggedInUser(t.app)
    const page = await s.get(codeRequest())
    const res = await s.post('/oauth/authorize', { ...consentFields(page.body), _csrf: null, decision: 'approve' })
    expect(res.statusCode).toBe(403)
    expect(res.headers.location).toBeUndefined()
  })

  it('issues at most one code for a replayed consent POST', async () => {
    const s = await loggedInUser(t.app)
    const page = await s.get(codeRequest())
    const fields = { ...consentFields(page.body), decision: 'approve' }
    const results = await Promise.all([s.post('/oauth/authorize', fields), s.post('/oauth/authorize', fields)])
    const again = await s.post('/oauth/authorize', fields)
    const codes = [...results, again].filter((r) => r.statusCode === 303)
    expect(codes).toHaveLength(1)
    expect(again.statusCode).toBe(400)
    expect(again.body).toMatch(/already answered/)
  })

  it('the form carries only the held request id and the CSRF token', async () => {
    const s = await loggedInUser(t.app)
    const page = await s.get(codeRequest({ scope: 'read write_teams' }))
    expect(Object.keys(consentFields(page.body)).sort()).toEqual(['_csrf', 'request_id'])
  })

  it('issues exactly what the page showed: edited form fields are ignored (finding 2)', async () => {
    const s = await loggedInUser(t.app)
    const page = await s.get(codeRequest({ scope: 'read write_events' }))
    const res = await s.post('/oauth/authorize', {
      ...consentFields(page.body),
      scope: 'write',
      redirect_uri: 'https://evil.example/cb',
      client_id: 'someone-else',
      decision: 'approve',
    })
    expect(res.statusCode).toBe(303)
    expect(String(res.headers.location)).toMatch(/^https:\/\/client\.example\/cb\?code=/)
    const token = await exchange(t.app, client, { code: locationParams(res).get('code')! })
    expect(token.json()).toMatchObject({ scope: 'read write_events' })
  })

  it('answers a held request only for the user it was shown to', async () => {
    const alice = await loggedInUser(t.app)
    const mallory = await loggedInUser(t.app)
    const page = await alice.get(codeRequest())
    const request_id = consentFields(page.body).request_id!
    await mallory.get('/applications')
    const res = await mallory.post('/oauth/authorize', { request_id, decision: 'approve' })
    expect(res.statusCode).toBe(400)
    expect(res.headers.location).toBeUndefined()
    expect(res.body).toMatch(/already answered or has expired/)
    // Still Alice's to answer.
    expect((await alice.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })).statusCode).toBe(303)
  })

  it('a held request expires after 10 minutes and is then gone', async () => {
    const s = await loggedInUser(t.app)
    const page = await s.get(codeRequest())
    t.clock.advance(10 * 60_000 + 1)
    try {
      const res = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
      expect(res.statusCode).toBe(400)
      expect(res.body).toMatch(/already answered or has expired/)
    } finally {
      t.clock.advance(-(10 * 60_000 + 1))
    }
  })

  it('is validated again against the application as it is now', async () => {
    const s = await loggedInUser(t.app)
    const narrowing = await createClient(t.db, { scopes: ['read', 'write'] })
    const page = await s.get(authorizeUrl({ response_type: 'code', client_id: narrowing.clientId, scope: 'write', state: 's' }))
    await t.db
      .updateTable('applications')
      .set({ allowed_scopes: ['read'] })
      .where('id', '=', narrowing.id)
      .execute()
    t.deps.caches.applications.clear()
    const res = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
    // The user has no grant for this client yet: the error is shown, not redirected.
    expect(res.statusCode).toBe(400)
    expect(res.body).toMatch(/invalid_scope|not allowed|scope/i)
    const count = await t.db
      .selectFrom('authorization_codes')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('application_id', '=', narrowing.id)
      .executeTakeFirstOrThrow()
    expect(Number(count.n)).toBe(0)
  })

  it('answered requests are deleted, and a user keeps at most ten open ones', async () => {
    const s = await loggedInUser(t.app)
    const user = await t.db.selectFrom('users').select('id').where('email', '=', s.email).executeTakeFirstOrThrow()
    const held = () =>
      t.db
        .selectFrom('pending_authorizations')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('user_id', '=', user.id)
        .executeTakeFirstOrThrow()
        .then((r) => Number(r.n))
    const page = await s.get(codeRequest())
    expect(await held()).toBe(1)
    await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'deny' })
    expect(await held()).toBe(0)
    for (let i = 0; i < 15; i++) await s.get(codeRequest({ prompt: 'consent' }))
    expect(await held()).toBe(10)
  })

  it("an eleventh open request drops the user's oldest one only, not another user's", async () => {
    const s = await loggedInUser(t.app)
    const other = await loggedInUser(t.app)
    const othersPage = await other.get(codeRequest({ state: 'other' }))
    const pages: string[] = []
    try {
      // A second apart, as pages opened one after another: which is oldest is not a tie.
      for (let i = 0; i < 11; i++) {
        t.clock.advance(1000)
        pages.push((await s.get(codeRequest({ state: `page-${i}`, prompt: 'consent' }))).body)
      }
      const oldest = await s.post('/oauth/authorize', { ...consentFields(pages[0]!), decision: 'approve' })
      expect(oldest.statusCode).toBe(400)
      expect(oldest.body).toMatch(/already answered or has expired/)
      for (let i = 1; i < 11; i++) {
        const res = await s.post('/oauth/authorize', { ...consentFields(pages[i]!), decision: 'approve' })
        expect(res.statusCode).toBe(303)
        expect(locationParams(res).get('state')).toBe(`page-${i}`)
      }
      const others = await other.post('/oauth/authorize', { ...consentFields(othersPage.body), decision: 'approve' })
      expect(others.statusCode).toBe(303)
    } finally {
      t.clock.advance(-11 * 1000)
    }
  })

  it('a session that ended while the page was open logs in again and comes back to the same request', async () => {
    const s = await loggedInUser(t.app)
    const page = await s.get(codeRequest({ scope: 'read write_teams' }))
    const fields = consentFields(page.body)
    const anonymous = new BrowserSession(t.app)
    await anonymous.get('/login')
    const res = await anonymous.post('/oauth/authorize', { request_id: fields.request_id!, decision: 'approve' })
    expect(res.statusCode).toBe(303)
    const next = new URL(String(res.headers.location), 'http://x').searchParams.get('next')!
    const back = new URLSearchParams(next.slice(next.indexOf('?') + 1))
    expect(Object.fromEntries(back)).toEqual({
      client_id: client.clientId,
      response_type: 'code',
      scope: 'read write_teams',
      redirect_uri: client.redirectUri,
      state: 'xyz',
    })
  })
})

describe('remembered consent', () => {
  it('skips the page for the code flow when these scopes (or more) were granted, unless prompt=consent', async () => {
    const s = await loggedInUser(t.app)
    const first = await s.get(codeRequest({ scope: 'read write' }))
    await s.post('/oauth/authorize', { ...consentFields(first.body), decision: 'approve' })

    const same = await s.get(codeRequest({ scope: 'write' }))
    expect(same.statusCode).toBe(302)
    expect(locationParams(same).get('code')).toMatch(/^gac_/)
    expect(locationParams(same).get('state')).toBe('xyz')

    expect((await s.get(codeRequest({ scope: 'read write', prompt: 'consent' }))).statusCode).toBe(200)
    expect((await s.get(codeRequest({ scope: 'write_users' }))).statusCode).toBe(200)
    const none = await s.get(codeRequest({ scope: 'write_users', prompt: 'none' }))
    expect(locationParams(none).get('error')).toBe('consent_required')
  })

  it('always asks for the token flow', async () => {
    const s = await loggedInUser(t.app)
    const first = await s.get(codeRequest())
    await s.post('/oauth/authorize', { ...consentFields(first.body), decision: 'approve' })
    const res = await s.get(codeRequest({ response_type: 'token' }))
    expect(res.statusCode).toBe(200)
  })
})

describe('token flow', () => {
  it('puts a usable token in the fragment: access_token, token_type, scope, state, iss', async () => {
    const s = await loggedInUser(t.app)
    const page = await s.get(codeRequest({ response_type: 'token', scope: 'read write_teams', state: 'a b' }))
    expect(page.body).toMatch(/handed to the application in your browser/)
    const res = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
    expect(res.statusCode).toBe(303)
    const location = String(res.headers.location)
    expect(location).toMatch(/^https:\/\/client\.example\/cb#access_token=gat_/)
    const p = locationParams(res, 'fragment')
    expect(p.get('token_type')).toBe('Bearer')
    expect(p.get('scope')).toBe('read write_teams')
    expect(p.get('state')).toBe('a b')
    expect(p.get('iss')).toBe(TEST_ISSUER)
    const row = await tokenRow(t.db, p.get('access_token')!)
    expect(row).toMatchObject({ application_id: client.id, revoked_at: null, authorization_code_id: null })
  })

  it('sends Deny to the fragment', async () => {
    const s = await loggedInUser(t.app)
    const page = await s.get(codeRequest({ response_type: 'token' }))
    const res = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'deny' })
    expect(locationParams(res, 'fragment').get('error')).toBe('access_denied')
  })
})

describe('default redirect_uri', () => {
  it('uses the only registered URI and binds no redirect_uri to the code', async () => {
    const s = await loggedInUser(t.app)
    const page = await s.get(authorizeUrl({ response_type: 'code', client_id: client.clientId }))
    const res = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
    expect(String(res.headers.location)).toMatch(/^https:\/\/client\.example\/cb\?code=/)
    const code = locationParams(res).get('code')!
    const token = await exchange(t.app, client, { code, redirect_uri: undefined })
    expect(token.statusCode, token.body).toBe(200)
  })
})
