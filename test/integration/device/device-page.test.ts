import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { applicationForm, createApplicationViaConsole } from '../../helpers/console.js'
import { type TestClient, buildOAuthTestApp, createClient, loggedInUser } from '../oauth/helpers.js'

/*
 * The device flow's edges (RFC 8628): the /device page (log-in first, wrong codes, the bounded
 * number of entries per address and per account, the second-factor policy), the device
 * authorization endpoint's refusals, and the console's checkbox.
 */

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'
let t: TestContext
let app: TestClient

beforeAll(async () => {
  t = await buildOAuthTestApp({ DEVICE_CODE_ENTRY_LIMIT: '3' })
  app = await createClient(t.db, { name: 'Lobby TV' })
  await t.db.updateTable('applications').set({ allow_device_flow: true }).where('id', '=', app.id).execute()
})
afterAll(async () => {
  await t.close()
})

function post(url: string, params: Record<string, string>) {
  return t.app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(params).toString(),
  })
}

/** The device's poll at the token endpoint (RFC 8628 3.4), as `client`. */
function pollDevice(deviceCode: string, client: TestClient = app) {
  return post('/oauth/token', {
    grant_type: DEVICE_GRANT,
    device_code: deviceCode,
    client_id: client.clientId,
    client_secret: client.clientSecret,
  })
}

async function startDevice(client: TestClient = app, scope = 'read') {
  const res = await post('/oauth/device_authorization', { client_id: client.clientId, client_secret: client.clientSecret, scope })
  expect(res.statusCode, res.body).toBe(200)
  expect(res.headers['cache-control']).toBe('no-store')
  return res.json() as { device_code: string; user_code: string }
}

describe('the /device page', () => {
  // Every test types from 127.0.0.1: each starts in a fresh window of the entry limit.
  beforeEach(() => t.clock.advance(15 * 60_000))

  it('sends a visitor to log in, then back to the same page with the code', async () => {
    const res = await new BrowserSession(t.app).get('/device?user_code=BCDF-GHJK')
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe(`/login?next=${encodeURIComponent('/device?user_code=BCDF-GHJK')}`)
  })

  it('refuses a wrong, malformed or expired code with the field marked, and never says which', async () => {
    const s = await loggedInUser(t.app, 'wrong-codes@example.com')
    const { user_code } = await startDevice()
    await s.get('/device')
    for (const typed of ['BCDF-GHJK', 'AEIO-UAEI']) {
      const res = await s.post('/device', { user_code: typed })
      expect(res.statusCode).toBe(400)
      expect(res.body).toContain('id="user_code-error"')
      expect(res.body).toContain('aria-invalid="true"')
    }
    // Expired: the same message as a wrong one.
    t.clock.advance(600_001)
    const expired = await s.post('/device', { user_code })
    expect(expired.statusCode).toBe(400)
    expect(expired.body).toContain('That code is not valid')
  })

  it('bounds entries per client address and per account (RFC 8628 5.1): 429 past DEVICE_CODE_ENTRY_LIMIT, even for a right code', async () => {
    const [a, b] = [await loggedInUser(t.app), await loggedInUser(t.app)]
    const { user_code } = await startDevice()
    await a.get('/device')
    for (let i = 0; i < 3; i++) expect((await a.post('/device', { user_code: 'BCDF-GHJK' })).statusCode).toBe(400)
    const refused = await a.post('/device', { user_code })
    expect(refused.statusCode).toBe(429)
    expect(refused.headers['retry-after']).toEqual(expect.any(String))
    expect(refused.body).toContain('Too many codes')
    // Another account from the same address: refused too.
    await b.get('/device')
    expect((await b.post('/device', { user_code })).statusCode).toBe(429)
    // The same account from another address: refused too.
    const elsewhere = new BrowserSession(t.app, '192.0.2.7')
    for (const [k, v] of a.cookies) elsewhere.cookies.set(k, v)
    await elsewhere.get('/device')
    expect((await elsewhere.post('/device', { user_code })).statusCode).toBe(429)
    // After the window, the right code shows the consent page.
    t.clock.advance(15 * 60_000)
    const fresh = await startDevice()
    expect((await a.post('/device', { user_code: fresh.user_code })).statusCode).toBe(200)
  })

  it('answers a request once: a second answer is refused and changes nothing', async () => {
    const s = await loggedInUser(t.app)
    const { user_code, device_code } = await startDevice()
    await s.get('/device')
    const consent = await s.post('/device', { user_code })
    const requestId = /name="request_id" value="([^"]+)"/.exec(consent.body)![1]!
    expect((await s.post('/device/answer', { request_id: requestId, decision: 'deny' })).statusCode).toBe(200)
    const again = await s.post('/device/answer', { request_id: requestId, decision: 'approve' })
    expect(again.statusCode).toBe(400)
    expect(again.body).toContain('already answered')
    const poll = await pollDevice(device_code, app)
    expect(poll.json()).toMatchObject({ error: 'access_denied' })
    expect((await s.post('/device/answer', { request_id: 'not-an-id', decision: 'approve' })).statusCode).toBe(400)
  })

  it("gives no token when the user revoked access between approving and the device's poll", async () => {
    const s = await loggedInUser(t.app)
    const { user_code, device_code } = await startDevice()
    await s.get('/device')
    const consent = await s.post('/device', { user_code })
    const requestId = /name="request_id" value="([^"]+)"/.exec(consent.body)![1]!
    expect((await s.post('/device/answer', { request_id: requestId, decision: 'approve' })).statusCode).toBe(200)
    const listing = await s.get('/authorized-applications')
    const grantId = /\/authorized-applications\/([0-9a-f-]{36})\/revoke/.exec(listing.body)![1]!
    expect((await s.post(`/authorized-applications/${grantId}/revoke`, {})).statusCode).toBe(303)
    const poll = await pollDevice(device_code, app)
    expect(poll.json()).toMatchObject({ error: 'access_denied' })
    const again = await pollDevice(device_code, app)
    expect(again.json()).toMatchObject({ error: 'invalid_grant' })
  })

  it('is behind the second-factor policy, as consent is', async () => {
    const strict = await buildOAuthTestApp({ REQUIRE_TWO_FACTOR: 'all' })
    try {
      const s = await loggedInUser(strict.app)
      const res = await s.get('/device')
      expect(res.statusCode).toBe(403)
      expect(res.body).toContain('second factor')
    } finally {
      await strict.close()
    }
  })
})

describe('POST /oauth/device_authorization and the device code grant refuse', () => {
  it('an application whose owner has not turned the device flow on: unauthorized_client, at both endpoints', async () => {
    const other = await createClient(t.db)
    const res = await post('/oauth/device_authorization', { client_id: other.clientId, client_secret: other.clientSecret })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ error: 'unauthorized_client' })
    const { device_code } = await startDevice()
    const poll = await pollDevice(device_code, other)
    expect(poll.json()).toMatchObject({ error: 'unauthorized_client' })
  })

  it("wrong credentials (invalid_client), a scope it may not ask for (invalid_scope), another client's or an unknown code (invalid_grant)", async () => {
    const wrong = await post('/oauth/device_authorization', { client_id: app.clientId, client_secret: 'nope' })
    expect(wrong.statusCode).toBe(401)
    expect(wrong.json()).toMatchObject({ error: 'invalid_client' })
    const scope = await post('/oauth/device_authorization', { client_id: app.clientId, client_secret: app.clientSecret, scope: 'admin' })
    expect(scope.json()).toMatchObject({ error: 'invalid_scope' })
    const other = await createClient(t.db)
    await t.db.updateTable('applications').set({ allow_device_flow: true }).where('id', '=', other.id).execute()
    const { device_code } = await startDevice(other)
    for (const code of [device_code, 'gdc_unknown']) {
      const poll = await pollDevice(code, app)
      expect(poll.statusCode).toBe(400)
      expect(poll.json()).toMatchObject({ error: 'invalid_grant' })
    }
    const missing = await post('/oauth/token', { grant_type: DEVICE_GRANT, client_id: app.clientId, client_secret: app.clientSecret })
    expect(missing.json()).toMatchObject({ error: 'invalid_request' })
  })
})

describe('POST /oauth/device_authorization is bounded per application', () => {
  it('keeps at most 100 live requests of one application: one more drops its oldest', async () => {
    const tv = await createClient(t.db)
    await t.db.updateTable('applications').set({ allow_device_flow: true }).where('id', '=', tv.id).execute()
    const first = await startDevice(tv)
    for (let i = 0; i < 100; i++) {
      t.clock.advance(1)
      await startDevice(tv)
    }
    const rows = await t.db.selectFrom('device_authorizations').select('id').where('application_id', '=', tv.id).execute()
    expect(rows).toHaveLength(100)
    const poll = await pollDevice(first.device_code, tv)
    expect(poll.json()).toMatchObject({ error: 'invalid_grant' })
  })
})

describe('the console', () => {
  it('turns the device flow on with its checkbox, and says so on the application page', async () => {
    const owner = await loggedInUser(t.app)
    const created = await createApplicationViaConsole(owner, { allow_device_flow: true })
    const row = await t.db.selectFrom('applications').select('allow_device_flow').where('id', '=', created.id).executeTakeFirstOrThrow()
    expect(row.allow_device_flow).toBe(true)
    const page = await owner.get(`/applications/${created.id}`)
    expect(page.body).toContain('Allowed: devices may ask users to type a code at /device')
    const edit = await owner.get(`/applications/${created.id}/edit`)
    expect(edit.body).toContain(
      'id="allow_device_flow" name="allow_device_flow" value="on" aria-describedby="allow_device_flow-hint" checked',
    )
    const saved = await owner.post(`/applications/${created.id}`, applicationForm({ allow_device_flow: false }))
    expect(saved.statusCode).toBeLessThan(400)
    const after = await t.db.selectFrom('applications').select('allow_device_flow').where('id', '=', created.id).executeTakeFirstOrThrow()
    expect(after.allow_device_flow).toBe(false)
  })
})
