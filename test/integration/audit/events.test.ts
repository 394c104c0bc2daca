import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AuditEventName } from '../../../src/audit/audit-log.js'
import type { TestContext } from '../../helpers/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { captureLog } from '../../helpers/capture-log.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { linkTo, mailboxes } from '../../helpers/mailbox.js'
import { applicationForm, createApplicationViaConsole, textById } from '../../helpers/console.js'
import { authorizeUrl, basic, consentFields, exchange, locationParams } from '../oauth/helpers.js'

/*
 * The audit log (docs/operating/admin.md "Audit log") through the real pages: a row for each event with the
 * expected fields, no secret in any row, nothing written on the token and introspection paths
 * or under remembered consent, and a recorder whose failure never fails the action.
 */

const PASSWORD = 'Tr0ub4dor&3-audit-password'
const ADDRESS = '198.51.100.23'
const REDIRECT_URI = 'https://planner.example.com/oauth/callback'

let t: TestContext
const { stream: logStream, lines: logLines } = captureLog()
beforeAll(async () => {
  t = await buildTestApp({ LOG_LEVEL: 'warn' }, undefined, { logStream })
})
afterAll(async () => {
  await t.close()
})

const rows = () =>
  t.db
    .selectFrom('audit_events')
    .select(['event', 'user_id', 'actor_id', 'client_id', 'application_name', 'client_address', 'detail', 'occurred_at'])
    .orderBy('id')
    .execute()
const countRows = async () => (await rows()).length
const userId = async (email: string) =>
  (await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()).id

describe('the audit log', () => {
  /** Everything secret that went over the wire in the scenario below. */
  const secrets: Record<string, string> = {}
  let events: Awaited<ReturnType<typeof rows>> = []
  let alice: string
  let clientId: string
  /** Rows written by the token, introspection, token-info and revocation endpoints and remembered consent. */
  let hotPathRows: number

  beforeAll(async () => {
    await t.db.deleteFrom('audit_events').execute()
    const s = new BrowserSession(t.app, ADDRESS)
    const email = 'alice@example.com'
    secrets.password = PASSWORD

    // Sign-up, and a second sign-up with the same email.
    await s.get('/signup')
    expect((await s.post('/signup', { email, password: PASSWORD })).statusCode).toBe(303)
    await s.get('/signup')
    expect((await s.post('/signup', { email, password: `${PASSWORD}-again` })).statusCode).toBe(303)
    secrets.secondPassword = `${PASSWORD}-again`
    alice = await userId(email)
    // The address verified through the mailed link, as registering an application needs.
    const verification = linkTo(mailboxes.get(t.app)!.to(email).at(0)!, '/verify-email')!
    secrets.verificationToken = new URL(verification, 'http://x').searchParams.get('token')!
    await s.verifyEmail(verification, PASSWORD)

    // A wrong password for Alice, and a password typed into the email field of an unknown account.
    await s.get('/login')
    expect((await s.post('/login', { email, password: 'wrong-password-123' })).statusCode).toBe(401)
    secrets.wrongPassword = 'wrong-password-123'
    await s.get('/login')
    expect((await s.post('/login', { email: 'hunter2-typed-as-email@example.net', password: PASSWORD })).statusCode).toBe(401)
    secrets.typedEmail = 'hunter2-typed-as-email'

    await s.logIn(email, PASSWORD)
    secrets.session = s.cookies.get('gatehouse_session')!
    secrets.csrfCookie = s.cookies.get('gatehouse_csrf')!
    secrets.device = s.cookies.get('gatehouse_device')!

    // The console: register, edit (rename), regenerate the secret.
    const created = await createApplicationViaConsole(s, { name: 'Planner', redirect_uris: REDIRECT_URI })
    clientId = created.clientId
    secrets.firstClientSecret = created.clientSecret
    await s.get(`/applications/${created.id}/edit`)
    secrets.csrfToken = s.lastCsrf!
    const edited = await s.post(`/applications/${created.id}`, applicationForm({ name: 'Team Planner', redirect_uris: REDIRECT_URI }))
    expect(edited.statusCode).toBe(303)
    await s.get(`/applications/${created.id}/secret`)
    const regenerated = await s.post(`/applications/${created.id}/secret`, {})
    const clientSecret = textById(regenerated.body, 'client-secret')!
    secrets.clientSecret = clientSecret
    const client = { id: created.id, clientId, clientSecret, redirectUri: REDIRECT_URI }

    // Consent, a code, a token; then the hot paths, which record nothing.
    const page = await s.get(authorizeUrl({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT_URI, scope: 'read write' }))
    expect(page.statusCode).toBe(200)
    const approved = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
    const code = locationParams(approved).get('code')!
    secrets.code = code
    const token = (await exchange(t.app, client, { code })).json().access_token as string
    secrets.token = token

    const before = await countRows()
    const remembered = await s.get(authorizeUrl({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT_URI, scope: 'read' }))
    expect(remembered.statusCode).toBe(302)
    secrets.rememberedCode = locationParams(remembered).get('code')!
    const secondToken = (await exchange(t.app, client, { code: secrets.rememberedCode })).json().access_token as string
    secrets.secondToken = secondToken
    const auth = { authorization: basic(clientId, clientSecret), 'content-type': 'application/x-www-form-urlencoded' }
    expect(
      (await t.app.inject({ method: 'POST', url: '/oauth/introspect', headers: auth, payload: `token=${token}` })).json(),
    ).toMatchObject({
      active: true,
    })
    expect(
      (await t.app.inject({ method: 'GET', url: '/oauth/token/info', headers: { authorization: `Bearer ${token}` } })).statusCode,
    ).toBe(200)
    expect((await t.app.inject({ method: 'POST', url: '/oauth/revoke', headers: auth, payload: `token=${secondToken}` })).statusCode).toBe(
      200,
    )
    // A replayed code and a failed client authentication are not security events of an account either.
    expect((await exchange(t.app, client, { code: secrets.rememberedCode })).statusCode).toBe(400)
    expect((await exchange(t.app, { ...client, clientSecret: secrets.firstClientSecret }, { code: 'gac_x' })).statusCode).toBe(401)
    hotPathRows = (await countRows()) - before

    // "Revoke access", then the application deleted, then log-out.
    const grants = await s.get('/authorized-applications')
    const grantId = /\/authorized-applications\/([0-9a-f-]{36})\/revoke/.exec(grants.body)![1]!
    expect((await s.post(`/authorized-applications/${grantId}/revoke`, {})).statusCode).toBe(303)
    await s.get(`/applications/${created.id}/delete`)
    expect((await s.post(`/applications/${created.id}/delete`, {})).statusCode).toBe(303)
    await s.get('/applications')
    expect((await s.post('/logout', {})).statusCode).toBe(303)

    events = await rows()
  })

  it('has one row per event, in order, with the account, the actor, the application and the address', () => {
    const mine = (event: AuditEventName, detail: string | RegExp = expect.any(String) as unknown as string) => ({
      event,
      user_id: alice,
      actor_id: alice,
      client_id: null,
      application_name: null,
      client_address: ADDRESS,
      detail,
    })
    const app = (event: AuditEventName, name: string, detail: string | RegExp) => ({
      ...mine(event, detail),
      client_id: clientId,
      application_name: name,
    })
    expect(events.map(({ occurred_at: _, ...rest }) => rest)).toEqual([
      mine('user.signed_up', ''),
      { ...mine('user.signup_email_taken', 'The account was not changed'), actor_id: null },
      // Verified without a session of the account: the page asked for the password again (docs/accounts.md "Account recovery").
      mine(
        'user.email_verified',
        'First proof of the address: a new password chosen, every factor removed, every grant revoked, 0 tokens revoked, 0 other sessions ended',
      ),
      { ...mine('user.login_failed', 'Wrong password'), actor_id: null },
      {
        ...mine('user.login_failed', 'No account has the email address typed (not recorded)'),
        user_id: null,
        actor_id: null,
      },
      mine('user.logged_in', 'From a new browser'),
      app('application.created', 'Planner', 'Scopes: read write'),
      app('application.updated', 'Team Planner', 'Changed: name; previously named "Planner"'),
      app('application.secret_regenerated', 'Team Planner', 'The previous client secret stopped working'),
      app('grant.given', 'Team Planner', 'Scopes: read write; authorization code issued'),
      app('grant.revoked', 'Team Planner', '1 access token revoked'),
      app('application.deleted', 'Team Planner', '0 access tokens revoked'),
      mine('user.logged_out', ''),
    ])
    for (const e of events) expect(e.occurred_at).toEqual(expect.any(Date))
  })

  it('writes nothing on the token, introspection, token-info and revocation endpoints, nor under remembered consent', () => {
    expect(hotPathRows).toBe(0)
  })

  it('holds no secret: no password, client secret, code, token, cookie, CSRF value or typed email', () => {
    const text = JSON.stringify(events)
    expect(Object.keys(secrets)).toHaveLength(15)
    for (const [name, value] of Object.entries(secrets)) {
      expect(value.length, name).toBeGreaterThan(8)
      expect(text, name).not.toContain(value)
    }
    expect(text).not.toMatch(/gcs_|gat_|gac_/)
  })

  it('records password changes, the end of other sessions and account deletion, with no secret', async () => {
    const s = new BrowserSession(t.app, ADDRESS)
    await s.signUpAndLogIn('changing@example.com', PASSWORD)
    const id = await userId('changing@example.com')
    await s.get('/account/password')
    const newPassword = `${PASSWORD}-renewed`
    expect((await s.post('/account/password', { current_password: PASSWORD, new_password: newPassword })).statusCode).toBe(303)
    await s.get('/account/sessions')
    expect((await s.post('/account/sessions/others', {})).statusCode).toBe(303)
    const before = (await rows()).filter((r) => r.user_id === id).map((r) => r.event)
    expect(before).toEqual(['user.signed_up', 'user.email_verified', 'user.logged_in', 'user.password_changed', 'user.sessions_ended'])
    await s.get('/account/delete')
    expect((await s.post('/account/delete', { password: newPassword })).statusCode).toBe(303)
    const deleted = (await rows()).filter((r) => r.event === 'user.deleted')
    expect(deleted).toHaveLength(1)
    expect(deleted[0]).toMatchObject({ user_id: null, actor_id: null, client_address: ADDRESS })
    // The account's own events stay, unlinked (docs/decisions/009-audit-log.md).
    expect((await rows()).filter((r) => r.event === 'user.password_changed' && r.user_id === null)).toHaveLength(1)
    const text = JSON.stringify(await rows())
    for (const secret of [PASSWORD, newPassword]) expect(text).not.toContain(secret)
  })

  it('records a log-in from a browser that logged in before as such', async () => {
    const s = new BrowserSession(t.app, ADDRESS)
    await s.signUpAndLogIn('returning@example.com', PASSWORD)
    await s.get('/applications')
    await s.post('/logout', {})
    await s.logIn('returning@example.com', PASSWORD)
    const last = (await rows()).at(-1)!
    expect(last).toMatchObject({ event: 'user.logged_in', detail: 'From a browser that logged in to this account before' })
  })

  it('records no grant when the user denies', async () => {
    const s = await new BrowserSession(t.app).signUpAndLogIn('denier@example.com', PASSWORD)
    const { clientId: id } = await createApplicationViaConsole(s, { name: 'Asker', redirect_uris: REDIRECT_URI })
    const before = await countRows()
    const page = await s.get(authorizeUrl({ response_type: 'code', client_id: id, redirect_uri: REDIRECT_URI }))
    const denied = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'deny' })
    expect(locationParams(denied).get('error')).toBe('access_denied')
    expect(await countRows()).toBe(before)
  })

  it("takes the client's address from X-Forwarded-For only behind a trusted proxy", async () => {
    const behind = await buildTestApp({ TRUST_PROXY: '127.0.0.1' }, t.testDb)
    try {
      const s = new BrowserSession(behind.app, '127.0.0.1')
      await s.get('/login')
      await s.post('/login', { email: 'nobody@example.com', password: PASSWORD }, { 'x-forwarded-for': '203.0.113.77' })
      const spoofed = new BrowserSession(behind.app, '192.0.2.1')
      await spoofed.get('/login')
      await spoofed.post('/login', { email: 'nobody@example.com', password: PASSWORD }, { 'x-forwarded-for': '203.0.113.78' })
      const last = (await rows()).slice(-2).map((r) => r.client_address)
      expect(last).toEqual(['203.0.113.77', '192.0.2.1'])
    } finally {
      await behind.close()
    }
  })

  it("never fails the user's action when the event cannot be written: one warning, and the answer stands", async () => {
    const s = await new BrowserSession(t.app).signUpAndLogIn('unrecorded@example.com', PASSWORD)
    await s.get('/applications/new')
    const unrecorded = t.deps.audit.unrecorded
    const lines = logLines.length
    // Every insert fails from now on (NOT VALID: the rows already there are not checked).
    await sql`alter table audit_events add constraint audit_events_refuse_all check (false) not valid`.execute(t.db)
    try {
      const res = await s.post('/applications', applicationForm({ name: 'Still Registered' }))
      expect(res.statusCode).toBe(200)
      expect(textById(res.body, 'client-secret')).toMatch(/^gcs_/)
    } finally {
      await t.db.schema.alterTable('audit_events').dropConstraint('audit_events_refuse_all').execute()
    }
    expect(t.deps.audit.unrecorded).toBe(unrecorded + 1)
    const warnings = logLines.slice(lines).filter((l) => l.includes('audit event not recorded'))
    expect(warnings).toHaveLength(1)
    expect(JSON.parse(warnings[0]!)).toMatchObject({
      level: 40,
      event: 'application.created',
      cause: expect.stringContaining('check constraint'),
    })
    const metrics = await t.app.inject('/metrics')
    expect(metrics.body).toMatch(/^gatehouse_audit_events_unrecorded_total [1-9]\d*$/m)
  })
})
