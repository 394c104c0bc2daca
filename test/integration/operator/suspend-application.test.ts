import { sha256Hex } from '../../../src/lib/crypto.js'
import type { LightMyRequestResponse } from 'fastify'
import { beforeAll, describe, expect, it } from 'vitest'
import { setVerified, suspendApplication, unsuspendApplication } from '../../../src/operator/moderation.js'
import type { BrowserSession } from '../../helpers/browser-session.js'
import { createApplicationViaConsole } from '../../helpers/console.js'
import { createAccessToken, createUser } from '../../helpers/factories.js'
import {
  type TestClient,
  authorizeUrl,
  basic,
  consentFields,
  createClient,
  exchange,
  expectOAuthError,
  grantAccess,
  loggedInUser,
  obtainCode,
} from '../oauth/helpers.js'
import { INACTIVE, inactiveOnceNoticed, introspect, isActive, operator, sameBrowserOn } from './helpers.js'
import { twoInstancesTestFile } from '../../helpers/oauth-set-up.js'

/*
 * An operator suspends an application (docs/operating/admin.md): its tokens and pending
 * codes are revoked and announced (this process's caches drop them at once, another instance's
 * once the notice arrives), it authenticates nowhere, /oauth/authorize shows an error page for it
 * (never a redirect), and its owner is told on its page. Unsuspending allows new authorizations;
 * what the suspension revoked stays revoked.
 */

const { t, b, rs } = twoInstancesTestFile()
let owner: BrowserSession & { email: string }
let alice: BrowserSession & { email: string }
let client: TestClient

const REDIRECT_URI = 'https://planner.example.com/oauth/callback'

beforeAll(async () => {
  owner = await loggedInUser(t.app)
  const created = await createApplicationViaConsole(owner, {
    name: 'Shady Planner',
    redirect_uris: REDIRECT_URI,
    scopes: ['read', 'write'],
  })
  client = { id: created.id, clientId: created.clientId, clientSecret: created.clientSecret, redirectUri: REDIRECT_URI }
  alice = await loggedInUser(t.app)
})

const tokenInfo = (token: string) =>
  t.app.inject({ method: 'GET', url: '/oauth/token/info', headers: { authorization: `Bearer ${token}` } })

const codeRequest = (extra: Record<string, string> = {}) =>
  authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read', state: 'st', ...extra })

describe('suspending an application', () => {
  let live: string
  let otherUsersToken: string
  let pendingCode: string
  let heldConsent: LightMyRequestResponse

  it('starts from a working application: tokens active and cached on both instances, a code pending', async () => {
    const first = await exchange(t.app, client, { code: await obtainCode(alice, client, { scope: 'read' }) })
    expect(first.statusCode, first.body).toBe(200)
    live = first.json<{ access_token: string }>().access_token
    const bob = await createUser(t.db)
    otherUsersToken = (await createAccessToken(t.db, { userId: bob.id, applicationId: client.id })).token
    // Remembered consent: the code comes straight back, and the application is now in both
    // instances' application caches.
    expect((await alice.get(codeRequest())).statusCode).toBe(302)
    expect((await sameBrowserOn(b, alice).get(codeRequest())).statusCode).toBe(302)
    pendingCode = await obtainCode(alice, client, { scope: 'read' })
    // A consent page left open: asked again (prompt=consent), not yet answered.
    heldConsent = await alice.get(codeRequest({ prompt: 'consent' }))
    expect(heldConsent.statusCode).toBe(200)
    expect((await tokenInfo(live)).statusCode).toBe(200)
    // Answers cached a moment before the suspension: by the resource server on both instances,
    // and the application's own authentication in t's client-authentication cache.
    for (const token of [live, otherUsersToken]) {
      expect(await isActive(t, rs, token)).toBe(true)
      expect(await isActive(b, rs, token)).toBe(true)
    }
    expect((await introspect(t, client, live)).json()).toMatchObject({ active: true, client_id: client.clientId })
  })

  it('revokes its tokens: this process answers {"active":false} at once, another instance once the notice arrives', async () => {
    expect(await suspendApplication(operator(t), client.id, t.clock())).toEqual({ changed: true, revoked: 2 })
    for (const token of [live, otherUsersToken]) {
      expect((await introspect(t, rs, token)).body).toBe(INACTIVE)
    }
    for (const token of [live, otherUsersToken]) await inactiveOnceNoticed(b, rs, token)
    const rows = await t.db.selectFrom('access_tokens').select('revoked_at').where('application_id', '=', client.id).execute()
    expect(rows.length).toBeGreaterThan(0)
    expect(rows.every((r) => r.revoked_at !== null)).toBe(true)
    // A second suspension changes nothing.
    expect(await suspendApplication(operator(t), client.id, t.clock())).toEqual({ changed: false, revoked: 0 })
  })

  it('deletes its pending codes, and the token endpoint refuses its right credentials with invalid_client', async () => {
    expect(await t.db.selectFrom('authorization_codes').select('id').where('code_hash', '=', sha256Hex(pendingCode)).execute()).toEqual([])
    expectOAuthError(await exchange(t.app, client, { code: pendingCode }), 'invalid_client', 401)
    expectOAuthError(await exchange(b.app, client, { code: pendingCode }), 'invalid_client', 401)
    const withBasic = await exchange(
      t.app,
      { ...client, clientSecret: '' },
      { code: pendingCode, client_id: undefined, client_secret: undefined },
      {
        authorization: basic(client.clientId, client.clientSecret),
      },
    )
    expectOAuthError(withBasic, 'invalid_client', 401)
    expect(withBasic.headers['www-authenticate']).toMatch(/^Basic/)
  })

  it('does not count its right credentials as failed authentications: 30 tries, no 429', async () => {
    for (let i = 0; i < 30; i++) {
      const res = await exchange(t.app, client, { code: `gac_nothing${i}` })
      expect(res.statusCode, `try ${i + 1}: ${res.body}`).toBe(401)
      expect(res.json()).toMatchObject({ error: 'invalid_client' })
    }
  })

  it('refuses its credentials at introspection with 401, though they were cached a moment before', async () => {
    for (const instance of [t, b]) {
      const res = await introspect(instance, client, live)
      expect(res.statusCode, res.body).toBe(401)
      expect(res.json()).toMatchObject({ error: 'invalid_client' })
    }
  })

  it('refuses its credentials at the revocation endpoint, and its tokens at token info', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      headers: { authorization: basic(client.clientId, client.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token: live }).toString(),
    })
    expectOAuthError(res, 'invalid_client', 401)
    expect((await tokenInfo(live)).statusCode).toBe(401)
  })

  it('answers a consent page left open at the suspension with an error page: no code, no redirect', async () => {
    const res = await alice.post('/oauth/authorize', { ...consentFields(heldConsent.body), decision: 'approve' })
    expect(res.statusCode).toBe(400)
    expect(res.headers.location).toBeUndefined()
    expect(res.body).toContain('This application has been suspended by the operator of this service.')
  })

  it('answers /oauth/authorize with an error page, never a redirect, even with a grant, remembered consent and a cached application', async () => {
    const sessions = { t: alice, b: sameBrowserOn(b, alice) }
    for (const [name, s] of Object.entries(sessions)) {
      for (const url of [
        codeRequest(),
        codeRequest({ prompt: 'none' }),
        codeRequest({ scope: 'admin' }),
        codeRequest({ prompt: 'consent' }),
      ]) {
        const res = await s.get(url)
        expect(res.statusCode, `${name} ${url}`).toBe(400)
        expect(res.headers.location, `${name} ${url}`).toBeUndefined()
        expect(res.body).toContain('This application has been suspended by the operator of this service.')
        expect(res.body).not.toContain(REDIRECT_URI)
      }
    }
    const loggedOut = await t.app.inject({ method: 'GET', url: codeRequest() })
    expect(loggedOut.statusCode).toBe(400)
    expect(loggedOut.headers.location).toBeUndefined()
    // No code was issued to it (the ones from before the suspension were consumed or deleted).
    const pending = await t.db
      .selectFrom('authorization_codes')
      .select('id')
      .where('application_id', '=', client.id)
      .where('consumed_at', 'is', null)
      .execute()
    expect(pending).toEqual([])
  })

  it("tells the owner on the application's page", async () => {
    const page = await owner.get(`/applications/${client.id}`)
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('Suspended by the operator.')
  })

  it('unsuspended: new authorizations and exchanges work, and what the suspension revoked stays revoked', async () => {
    t.clock.advance(60_000)
    expect(await unsuspendApplication(operator(t), client.id)).toEqual({ changed: true })
    expect(await unsuspendApplication(operator(t), client.id)).toEqual({ changed: false })
    expect((await owner.get(`/applications/${client.id}`)).body).not.toContain('Suspended by the operator')

    const res = await exchange(t.app, client, { code: await obtainCode(alice, client, { scope: 'read' }) })
    expect(res.statusCode, res.body).toBe(200)
    const fresh = res.json<{ access_token: string }>().access_token
    expect(await isActive(t, rs, fresh)).toBe(true)
    expect(await isActive(b, rs, fresh)).toBe(true)
    expect((await introspect(t, client, fresh)).statusCode).toBe(200)
    // The other instance authorizes it again too, at once.
    const onB = await sameBrowserOn(b, alice).get(codeRequest())
    expect(onB.statusCode).toBe(302)
    expect(String(onB.headers.location)).toMatch(/^https:\/\/planner\.example\.com\/oauth\/callback\?code=gac_/)

    for (const token of [live, otherUsersToken]) {
      expect((await introspect(t, rs, token)).body).toBe(INACTIVE)
      expect((await introspect(b, rs, token)).body).toBe(INACTIVE)
    }
    // The code pending at the suspension was deleted, not merely refused.
    expectOAuthError(await exchange(t.app, client, { code: pendingCode }), 'invalid_grant')
  })
})

describe('a suspended application that an operator also verified', () => {
  it('still gets an error page for a request that would have been redirected', async () => {
    const verified = await createClient(t.db, { name: 'Verified but suspended' })
    await setVerified(operator(t), verified.id, true, t.clock())
    const s = await loggedInUser(t.app)
    await grantAccess(t.db, s.email, verified.id)
    const url = authorizeUrl({ response_type: 'code', client_id: verified.clientId, scope: 'admin', state: 'x' })
    expect((await s.get(url)).statusCode).toBe(302)
    await suspendApplication(operator(t), verified.id, t.clock())
    const res = await s.get(url)
    expect(res.statusCode).toBe(400)
    expect(res.headers.location).toBeUndefined()
    expect(res.body).toContain('suspended by the operator')
  })
})
