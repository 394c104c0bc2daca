import { beforeAll, describe, expect, it } from 'vitest'
import { startSession } from '../../../src/accounts/sessions/sessions.js'
import { SESSION_COOKIE } from '../../../src/http/session.js'
import { suspendApplication, suspendUser, unsuspendUser } from '../../../src/operator/moderation.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { createApplicationViaConsole } from '../../helpers/console.js'
import { type TestClient, authorizeUrl, createClient, exchange, expectOAuthError, loggedInUser, obtainCode } from '../oauth/helpers.js'
import { INACTIVE, inactiveOnceNoticed, introspect, isActive, operator, userIdOf } from './helpers.js'
import { readTokenFor, twoInstancesTestFile } from '../../helpers/oauth-set-up.js'

/*
 * An operator suspends an account (docs/operating/admin.md): its sessions end, its tokens
 * are revoked, its applications are suspended with it, and its log-in is refused with a
 * neutral message that only the right password reveals. Unsuspending restores the log-in and
 * the applications suspended with the account, not one the operator had suspended on its own.
 */

const PASSWORD = 'correct horse battery'
const NEUTRAL = 'This account cannot log in. Contact the operator of this service if you think this is a mistake.'

const { t, b, rs } = twoInstancesTestFile()
let mallory: BrowserSession & { email: string }
let malloryId: string
let alice: BrowserSession & { email: string }
/** Someone else's application, which Mallory authorized. */
let othersApp: TestClient
/** Mallory's applications: `kept` suspended with her; `alreadySuspended` by the operator before. */
let kept: TestClient
let alreadySuspended: TestClient

async function appOf(s: BrowserSession, name: string, redirectUri: string): Promise<TestClient> {
  const created = await createApplicationViaConsole(s, { name, redirect_uris: redirectUri, scopes: ['read'] })
  return { id: created.id, clientId: created.clientId, clientSecret: created.clientSecret, redirectUri }
}

const tokenFor = (s: BrowserSession, client: TestClient) => readTokenFor(t, s, client)

/** The log-in form as a browser posts it, from a fresh browser. */
async function logInAttempt(email: string, password: string) {
  const s = new BrowserSession(t.app)
  await s.get('/login')
  const res = await s.post('/login', { email, password })
  return { s, res }
}

function applicationRow(id: string) {
  return t.db.selectFrom('applications').select(['suspended_at']).where('id', '=', id).executeTakeFirstOrThrow()
}

beforeAll(async () => {
  mallory = await loggedInUser(t.app)
  malloryId = await userIdOf(t, mallory.email)
  alice = await loggedInUser(t.app)
  othersApp = await createClient(t.db, { name: 'Bob’s Planner', scopes: ['read'] })
  kept = await appOf(mallory, 'Mallory Mail', 'https://mail.mallory.example/cb')
  alreadySuspended = await appOf(mallory, 'Mallory Phish', 'https://phish.mallory.example/cb')
})

describe('suspending a user', () => {
  let mallorysToken: string
  let alicesTokenForMallorysApp: string
  let alicesTokenForOthersApp: string
  let mallorysPendingCode: string

  it('starts from a working account: tokens cached active on both instances', async () => {
    mallorysToken = await tokenFor(mallory, othersApp)
    // A code of hers not yet exchanged (remembered consent gives it straight away).
    mallorysPendingCode = await obtainCode(mallory, othersApp, { scope: 'read' })
    alicesTokenForMallorysApp = await tokenFor(alice, kept)
    alicesTokenForOthersApp = await tokenFor(alice, othersApp)
    for (const token of [mallorysToken, alicesTokenForMallorysApp, alicesTokenForOthersApp]) {
      expect(await isActive(t, rs, token)).toBe(true)
      expect(await isActive(b, rs, token)).toBe(true)
    }
    expect((await mallory.get('/applications')).statusCode).toBe(200)

    // The operator suspended one of her applications on its own, earlier.
    await suspendApplication(operator(t), alreadySuspended.id, t.clock())
    t.clock.advance(60_000)
  })

  it('ends her console session at once: the next page sends her to log in', async () => {
    expect(await suspendUser(operator(t), malloryId, t.clock())).toEqual({ changed: true })
    const res = await mallory.get('/applications')
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe('/login?next=%2Fapplications')
    expect(await t.db.selectFrom('sessions').select('user_id').where('user_id', '=', malloryId).execute()).toEqual([])
    expect(await suspendUser(operator(t), malloryId, t.clock())).toEqual({ changed: false })
  })

  it('lets no session of hers resolve, even one created after the suspension', async () => {
    const id = await startSession(t.db, malloryId, t.clock(), 3_600_000)
    const res = await t.app.inject({ method: 'GET', url: '/applications', cookies: { [SESSION_COOKIE]: id } })
    expect(res.statusCode).toBe(303)
    expect(String(res.headers.location)).toMatch(/^\/login/)
  })

  it('revokes her tokens and codes for other applications, here at once and on another instance once the notice arrives', async () => {
    expect((await introspect(t, rs, mallorysToken)).body).toBe(INACTIVE)
    await inactiveOnceNoticed(b, rs, mallorysToken)
    // Her pending code is gone with them.
    expectOAuthError(await exchange(t.app, othersApp, { code: mallorysPendingCode }), 'invalid_grant')
    // Other people's tokens for the same application are not hers.
    expect(await isActive(t, rs, alicesTokenForOthersApp)).toBe(true)
    expect(await isActive(b, rs, alicesTokenForOthersApp)).toBe(true)
  })

  it('suspends her applications: their tokens inactive, their credentials refused, /oauth/authorize an error page', async () => {
    expect((await applicationRow(kept.id)).suspended_at).not.toBeNull()
    expect((await introspect(t, rs, alicesTokenForMallorysApp)).body).toBe(INACTIVE)
    await inactiveOnceNoticed(b, rs, alicesTokenForMallorysApp)
    expectOAuthError(await exchange(t.app, kept, { code: 'gac_none' }), 'invalid_client', 401)
    const page = await alice.get(authorizeUrl({ response_type: 'code', client_id: kept.clientId, scope: 'read' }))
    expect(page.statusCode).toBe(400)
    expect(page.headers.location).toBeUndefined()
    // The application she only used is not hers to lose.
    expect((await applicationRow(othersApp.id)).suspended_at).toBeNull()
  })

  it('refuses her right password with 403 and the neutral message; a wrong one gets the usual 401', async () => {
    const right = await logInAttempt(mallory.email, PASSWORD)
    expect(right.res.statusCode).toBe(403)
    expect(right.res.body).toContain(NEUTRAL)
    expect(right.res.headers.location).toBeUndefined()
    expect(right.s.cookies.has(SESSION_COOKIE)).toBe(false)
    expect((await right.s.get('/applications')).statusCode).toBe(303)

    const wrong = await logInAttempt(mallory.email, 'not her password at all')
    expect(wrong.res.statusCode).toBe(401)
    expect(wrong.res.body).toContain('Incorrect email or password.')
    expect(wrong.res.body).not.toContain(NEUTRAL)
    // As for an email nobody has.
    const nobody = await logInAttempt('nobody-here@example.com', PASSWORD)
    expect(nobody.res.statusCode).toBe(401)
    expect(nobody.res.body).toContain('Incorrect email or password.')
  })

  it('unsuspended: she logs in again, and gets back the applications suspended with her, not the one suspended before', async () => {
    t.clock.advance(60_000)
    expect(await unsuspendUser(operator(t), malloryId)).toEqual({ changed: true, applications: 1 })
    expect(await unsuspendUser(operator(t), malloryId)).toEqual({ changed: false, applications: 0 })

    const back = await logInAttempt(mallory.email, PASSWORD)
    expect(back.res.statusCode).toBe(303)
    expect((await back.s.get('/applications')).statusCode).toBe(200)

    expect((await applicationRow(kept.id)).suspended_at).toBeNull()
    expect((await applicationRow(alreadySuspended.id)).suspended_at).not.toBeNull()
    expect((await back.s.get(`/applications/${alreadySuspended.id}`)).body).toContain('Suspended by the operator.')
    expect((await back.s.get(`/applications/${kept.id}`)).body).not.toContain('Suspended by the operator')

    // Her restored application authorizes and exchanges again; the other is still refused.
    const fresh = await tokenFor(alice, kept)
    expect(await isActive(t, rs, fresh)).toBe(true)
    expectOAuthError(await exchange(t.app, alreadySuspended, { code: 'gac_none' }), 'invalid_client', 401)

    // What the suspension revoked stays revoked.
    for (const token of [mallorysToken, alicesTokenForMallorysApp]) {
      expect((await introspect(t, rs, token)).body).toBe(INACTIVE)
      expect((await introspect(b, rs, token)).body).toBe(INACTIVE)
    }
  })
})
