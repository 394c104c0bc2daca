import type { LightMyRequestResponse } from 'fastify'
import { beforeAll, describe, expect, it } from 'vitest'
import { TEST_ISSUER } from '../helpers/app.js'
import { BrowserSession } from '../helpers/browser-session.js'
import { applicationForm, createApplicationViaConsole } from '../helpers/console.js'
import { authorizeUrl, consentFields, locationParams, loggedInUser } from './oauth/helpers.js'
import { oauthClientTestFile } from '../helpers/oauth-set-up.js'

/*
 * Every state-changing request in the page context must come from Gatehouse's own pages: a
 * cross-site POST is refused even with a valid CSRF token (docs/operating/backups-and-upgrades.md "Operations"). The CSRF token
 * stays the first line; Sec-Fetch-Site and Origin are the second (src/http/page-security.ts).
 * Every case below carries a valid token, so only the headers decide.
 */

const { t, client } = oauthClientTestFile({ redirectUris: ['https://client.example/cb'] })

// PUBLIC_URL is TEST_ISSUER, http://gatehouse.test.
const REFUSED: Array<[string, Record<string, string>]> = [
  ['a cross-site form (Origin and Sec-Fetch-Site)', { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }],
  ['Sec-Fetch-Site: cross-site without Origin', { 'sec-fetch-site': 'cross-site' }],
  ['another subdomain of the same site', { origin: 'http://evil.gatehouse.test', 'sec-fetch-site': 'same-site' }],
  ['Sec-Fetch-Site: same-site without Origin', { 'sec-fetch-site': 'same-site' }],
  ['a foreign Origin without Sec-Fetch-Site', { origin: 'https://evil.example' }],
  ['Origin: null (an opaque origin)', { origin: 'null' }],
  ['the same host over another scheme', { origin: 'https://gatehouse.test' }],
  ['the same host on another port', { origin: 'http://gatehouse.test:8080' }],
  ['a foreign Origin despite Sec-Fetch-Site: same-origin', { origin: 'https://evil.example', 'sec-fetch-site': 'same-origin' }],
  ['an unknown Sec-Fetch-Site value', { 'sec-fetch-site': 'nonsense' }],
]

const ALLOWED: Array<[string, Record<string, string>]> = [
  ['a same-origin form', { origin: TEST_ISSUER, 'sec-fetch-site': 'same-origin' }],
  ['a user-initiated request (Sec-Fetch-Site: none)', { 'sec-fetch-site': 'none' }],
  ['its own Origin without Fetch Metadata', { origin: TEST_ISSUER }],
  ['neither header, as older clients send', {}],
]

function expectRefused(res: LightMyRequestResponse): void {
  expect(res.statusCode).toBe(403)
  expect(res.headers['content-type']).toMatch(/^text\/html/)
  expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'")
  expect(res.body).toContain('This form was sent from another site')
}

let names = 0
describe('a console form (register an application)', () => {
  it.each(REFUSED)('refuses %s with 403 and an error page; nothing is registered', async (_, headers) => {
    const s = await loggedInUser(t.app)
    await s.get('/applications/new')
    const name = `Cross ${++names}`
    expectRefused(await s.post('/applications', applicationForm({ name }), headers))
    expect(await t.db.selectFrom('applications').select('id').where('name', '=', name).executeTakeFirst()).toBeUndefined()
  })

  it.each(ALLOWED)('accepts %s', async (_, headers) => {
    const s = await loggedInUser(t.app)
    await s.get('/applications/new')
    const res = await s.post('/applications', applicationForm({ name: `Own ${++names}` }), headers)
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('id="client-secret"')
  })
})

describe('log-in', () => {
  const email = 'same-origin-login@example.com'
  beforeAll(async () => {
    await new BrowserSession(t.app).signUpAndLogIn(email)
  })

  it.each(REFUSED)('refuses %s; no session is started', async (_, headers) => {
    const s = new BrowserSession(t.app)
    await s.get('/login')
    expectRefused(await s.post('/login', { email, password: 'correct horse battery' }, headers))
    expect(s.cookies.has('gatehouse_session')).toBe(false)
  })

  it.each(ALLOWED)('accepts %s', async (_, headers) => {
    const s = new BrowserSession(t.app)
    await s.get('/login')
    const res = await s.post('/login', { email, password: 'correct horse battery' }, headers)
    expect(res.statusCode).toBe(303)
    expect(s.cookies.has('gatehouse_session')).toBe(true)
  })
})

describe('log-out', () => {
  it.each(REFUSED)('refuses %s; the session goes on', async (_, headers) => {
    const s = await loggedInUser(t.app)
    await s.get('/applications')
    expectRefused(await s.post('/logout', {}, headers))
    expect((await s.get('/applications')).statusCode).toBe(200)
  })

  it.each(ALLOWED)('accepts %s', async (_, headers) => {
    const s = await loggedInUser(t.app)
    await s.get('/applications')
    const res = await s.post('/logout', {}, headers)
    expect(res.statusCode).toBe(303)
    expect((await s.get('/applications')).statusCode).toBe(303)
  })
})

describe('consent (POST /oauth/authorize)', () => {
  const request = () => authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: client.redirectUri, state: 's1' })

  it.each(REFUSED)('refuses %s; nothing is issued, and the same form still works from the page', async (_, headers) => {
    const s = await loggedInUser(t.app)
    const page = await s.get(request())
    expect(page.statusCode).toBe(200)
    const fields = { ...consentFields(page.body), decision: 'approve' }
    expectRefused(await s.post('/oauth/authorize', fields, headers))
    // Had the refused POST issued anything, this one answer would be spent.
    const own = await s.post('/oauth/authorize', fields, { origin: TEST_ISSUER, 'sec-fetch-site': 'same-origin' })
    expect(own.statusCode).toBe(303)
    expect(locationParams(own).get('code')).toBeTruthy()
  })

  it.each(ALLOWED)('accepts %s', async (_, headers) => {
    const s = await loggedInUser(t.app)
    const page = await s.get(request())
    const res = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' }, headers)
    expect(res.statusCode).toBe(303)
    expect(locationParams(res).get('code')).toBeTruthy()
  })
})

describe('every other form of the page context', () => {
  const crossSite = { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }

  it('refuses a cross-site sign-up, edit, secret regeneration, deletion and revocation of access', async () => {
    const s = await loggedInUser(t.app)
    const app = await createApplicationViaConsole(s, { name: 'Target' })
    await s.get(`/applications/${app.id}/edit`)
    const before = await t.db.selectFrom('applications').select(['name', 'secret_hash']).where('id', '=', app.id).executeTakeFirstOrThrow()
    const grant = '00000000-0000-4000-8000-000000000000'
    for (const [url, fields] of [
      ['/signup', { email: 'forged-signup@example.com', password: 'correct horse battery' }],
      [`/applications/${app.id}`, applicationForm({ name: 'Renamed by evil' })],
      [`/applications/${app.id}/secret`, {}],
      [`/applications/${app.id}/delete`, {}],
      [`/authorized-applications/${grant}/revoke`, {}],
      ['/no-such-form', {}],
    ] as const) {
      expectRefused(await s.post(url, fields, crossSite))
    }
    expect(await t.db.selectFrom('users').select('id').where('email', '=', 'forged-signup@example.com').executeTakeFirst()).toBeUndefined()
    const after = await t.db.selectFrom('applications').select(['name', 'secret_hash']).where('id', '=', app.id).executeTakeFirstOrThrow()
    expect(after).toEqual(before)
  })

  it.each(['PUT', 'PATCH', 'DELETE'])(
    'refuses a cross-site %s as well: the rule is every method but GET, HEAD and OPTIONS',
    async (method) => {
      const res = await t.app.inject({ method: method as 'PUT', url: '/applications', headers: { origin: 'https://evil.example' } })
      expectRefused(res)
    },
  )

  it('lets GET through from anywhere: links from other sites must work', async () => {
    const res = await t.app.inject({ url: '/login', headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' } })
    expect(res.statusCode).toBe(200)
  })
})
