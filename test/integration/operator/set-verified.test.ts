import type { LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { setOperatorRole, setVerified } from '../../../src/operator/moderation.js'
import type { TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import {
  TEST_ISSUER,
  type TestClient,
  authorizeUrl,
  buildOAuthTestApp,
  consentFields,
  createClient,
  locationParams,
  loggedInUser,
  returnLink,
} from '../oauth/helpers.js'
import { operator } from './helpers.js'
import { oauthTestFile } from '../../helpers/oauth-set-up.js'

/*
 * Verified applications and an honest consent page (docs/operating/admin.md): an operator
 * vouches for a verified application, so its error responses are redirected like those of an
 * application the user once granted (docs/decisions/005-trusted-redirects.md); the consent page
 * says whether <SERVICE_NAME> verified the application, shows its homepage and privacy policy,
 * and no longer shows the owner's unverified email.
 */

const { t } = oauthTestFile()

async function ownerEmail(client: TestClient): Promise<string> {
  const row = await t.db
    .selectFrom('applications')
    .innerJoin('users', 'users.id', 'applications.owner_id')
    .select('users.email')
    .where('applications.id', '=', client.id)
    .executeTakeFirstOrThrow()
  return row.email
}

describe('error responses of a verified application', () => {
  let client: TestClient
  let stranger: BrowserSession & { email: string }
  beforeAll(async () => {
    client = await createClient(t.db, { name: 'Big Planner', redirectUris: ['https://client.example/cb'] })
    // Logged in, and never granted this application anything.
    stranger = await loggedInUser(t.app)
  })

  const refused = () => authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'admin', state: 'st-1' })
  const loggedOutPromptNone = () => authorizeUrl({ response_type: 'code', client_id: client.clientId, prompt: 'none', state: 'st-2' })
  const loggedOut = (url: string) => t.app.inject({ method: 'GET', url })

  it('unverified: the untrusted error page names the destination and offers "Return to <host>"', async () => {
    for (const res of [await stranger.get(refused()), await loggedOut(refused()), await loggedOut(loggedOutPromptNone())]) {
      expect(res.statusCode).toBe(400)
      expect(res.headers.location).toBeUndefined()
      expect(res.body).toContain('Gatehouse has not sent you back on its own')
      const link = returnLink(res.body)
      expect(link?.text).toBe('Return to client.example')
      expect(link?.href).toMatch(/^https:\/\/client\.example\/cb\?error=/)
    }
  })

  it('verified: the error goes straight back to the client, for a user who never granted it and for nobody logged in', async () => {
    expect(await setVerified(operator(t), client.id, true, t.clock())).toEqual({ changed: true })
    expect(await setVerified(operator(t), client.id, true, t.clock())).toEqual({ changed: false })
    for (const res of [await stranger.get(refused()), await loggedOut(refused())]) {
      expect(res.statusCode).toBe(302)
      expect(String(res.headers.location)).toMatch(/^https:\/\/client\.example\/cb\?/)
      const p = locationParams(res)
      expect(p.get('error')).toBe('invalid_scope')
      expect(p.get('state')).toBe('st-1')
      expect(p.get('iss')).toBe(TEST_ISSUER)
      expect(p.get('code')).toBeNull()
    }
    const none = await loggedOut(loggedOutPromptNone())
    expect(none.statusCode).toBe(302)
    // OpenID Connect Core 3.1.2.6: prompt=none without a session is login_required.
    expect(locationParams(none).get('error')).toBe('login_required')
    expect(locationParams(none).get('state')).toBe('st-2')
  })

  it('verified or not, an unusable redirect URI is an error page, never a redirect', async () => {
    const res = await stranger.get(
      authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: 'https://evil.example/cb' }),
    )
    expect(res.statusCode).toBe(400)
    expect(res.headers.location).toBeUndefined()
    expect(returnLink(res.body)).toBeUndefined()
  })

  it('unverified again: back to the untrusted page at once', async () => {
    expect(await setVerified(operator(t), client.id, false, t.clock())).toEqual({ changed: true })
    const res = await stranger.get(refused())
    expect(res.statusCode).toBe(400)
    expect(returnLink(res.body)?.text).toBe('Return to client.example')
  })
})

describe('the consent page', () => {
  it('says Gatehouse has not verified an unverified application, and shows no owner email', async () => {
    const client = await createClient(t.db, { name: 'Unknown Planner' })
    const s = await loggedInUser(t.app)
    const page = await s.get(authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read' }))
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('Gatehouse has not verified this application.')
    expect(page.body).not.toContain('Verified by Gatehouse')
    expect(page.body).toContain('wants to access your Gatehouse account')
    expect(page.body).not.toContain(await ownerEmail(client))
    expect(page.body).not.toContain('Registered by')
    // No links were given: none shown.
    expect(page.body).not.toContain('Homepage:')
    expect(page.body).not.toContain('Privacy policy:')
  })

  it('says "Verified by Gatehouse" once an operator verified it', async () => {
    const client = await createClient(t.db, { name: 'Known Planner' })
    await setVerified(operator(t), client.id, true, t.clock())
    const s = await loggedInUser(t.app)
    const page = await s.get(authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read' }))
    expect(page.statusCode).toBe(200)
    expect(page.body).toMatch(/<p class="verified" id="verification">Verified by Gatehouse<\/p>/)
    expect(page.body).not.toContain('has not verified')
    expect(page.body).not.toContain(await ownerEmail(client))
    // The consent still works.
    const res = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
    expect(res.statusCode).toBe(303)
    expect(locationParams(res).get('code')).toMatch(/^gac_/)
  })

  it("shows the owner's email only once the owner has verified it", async () => {
    const client = await createClient(t.db, { name: 'Owned Planner' })
    const email = await ownerEmail(client)
    const s = await loggedInUser(t.app)
    const url = authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read' })
    expect((await s.get(url)).body).not.toContain(email)
    await t.db.updateTable('users').set({ email_verified_at: t.clock() }).where('email', '=', email).execute()
    const page = await s.get(url)
    expect(page.body).toContain(`Registered by ${email}`)
  })

  it('shows the homepage and privacy policy links when set', async () => {
    const client = await createClient(t.db, { name: 'Linked Planner' })
    await t.db
      .updateTable('applications')
      .set({ homepage_url: 'https://planner.example/', privacy_policy_url: 'https://planner.example/privacy?lang=en&v=2' })
      .where('id', '=', client.id)
      .execute()
    const s = await loggedInUser(t.app)
    const page = await s.get(authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read' }))
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('Homepage: <a href="https://planner.example/" rel="noopener noreferrer">https://planner.example/</a>')
    expect(page.body).toContain(
      'Privacy policy: <a href="https://planner.example/privacy?lang=en&amp;v=2" rel="noopener noreferrer">https://planner.example/privacy?lang=en&amp;v=2</a>',
    )

    // Only the one that is set.
    await t.db.updateTable('applications').set({ homepage_url: null }).where('id', '=', client.id).execute()
    const again = await s.get(authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read' }))
    expect(again.body).not.toContain('Homepage:')
    expect(again.body).toContain('Privacy policy: <a href="https://planner.example/privacy?lang=en&amp;v=2"')
  })
})

describe('SERVICE_NAME', () => {
  let acme: TestContext
  let client: TestClient
  let s: BrowserSession & { email: string }
  beforeAll(async () => {
    acme = await buildOAuthTestApp({ SERVICE_NAME: 'Acme ID' })
    client = await createClient(acme.db, { name: 'Acme Planner', redirectUris: ['https://client.example/cb'] })
    s = await loggedInUser(acme.app)
  })
  afterAll(async () => {
    await acme?.close()
  })

  const consent = () => s.get(authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read' }))

  it('names the service in the consent text and the layout', async () => {
    const page = await consent()
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('<title>Authorize Acme Planner · Acme ID</title>')
    expect(page.body).toContain('<a class="brand" href="/">Acme ID</a>')
    expect(page.body).toContain('wants to access your Acme ID account')
    expect(page.body).toContain('Acme ID has not verified this application.')
    expect(page.body).not.toContain('Gatehouse')

    await setVerified({ db: acme.db, bus: acme.deps.bus, record: async () => {} }, client.id, true, acme.clock())
    const verified = await consent()
    expect(verified.body).toContain('Verified by Acme ID')
    expect(verified.body).not.toContain('Gatehouse')
  })

  it('says "Gatehouse" on no page', async () => {
    const anonymous = new BrowserSession(acme.app)
    const untrusted = await createClient(acme.db, { name: 'Other Planner', redirectUris: ['https://client.example/cb'] })
    const pages: Record<string, LightMyRequestResponse> = {
      home: await anonymous.get('/'),
      login: await anonymous.get('/login'),
      signup: await anonymous.get('/signup'),
      'not found': await anonymous.get('/no-such-page'),
      'untrusted error': await anonymous.get(authorizeUrl({ response_type: 'code', client_id: untrusted.clientId, scope: 'admin' })),
      'authorize error': await anonymous.get(authorizeUrl({ response_type: 'code', client_id: 'no-such-client' })),
      'form without its CSRF token': await s.post('/applications', { _csrf: null, name: 'x' }),
      'form from another site': await s.post('/applications', { name: 'x' }, { origin: 'https://evil.example' }),
      console: await s.get('/applications'),
      'security log': await s.get('/account/security-log'),
    }
    // The admin pages, as an operator.
    await setOperatorRole({ db: acme.db, bus: acme.deps.bus, record: async () => {} }, s.email, true)
    const ownerId = (await acme.db.selectFrom('applications').select('owner_id').where('id', '=', client.id).executeTakeFirstOrThrow())
      .owner_id
    Object.assign(pages, {
      'admin home': await s.get('/admin'),
      'admin users': await s.get('/admin/users'),
      'admin user': await s.get(`/admin/users/${ownerId}`),
      'admin user suspension': await s.get(`/admin/users/${ownerId}/suspend`),
      'admin applications': await s.get('/admin/applications'),
      'admin application': await s.get(`/admin/applications/${client.id}`),
      'admin application verification': await s.get(`/admin/applications/${client.id}/verify`),
    })
    for (const [name, res] of Object.entries(pages)) {
      if (name.startsWith('admin') || name === 'security log') expect(res.statusCode, name).toBe(200)
    }
    const saying = (text: string) => Object.entries(pages).flatMap(([name, res]) => (res.body.includes(text) ? [name] : []))
    expect(saying('Acme ID')).toEqual(Object.keys(pages))
    expect(saying('Gatehouse')).toEqual([])
  })
})
