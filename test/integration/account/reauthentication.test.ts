import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { createApplicationViaConsole, expectAccessiblePage } from '../../helpers/console.js'
import { createUser } from '../../helpers/factories.js'
import { loggedInUser } from '../oauth/helpers.js'
import { STEP_MS, enrolTotp, totpCode } from '../../helpers/totp.js'

/*
 * "Sudo mode" (docs/accounts.md "Re-authentication"): the sensitive actions need a log-in or a
 * password typed again at /reauth within REAUTH_WINDOW_MINUTES of the clock's now. A stale GET
 * comes back to itself after /reauth, a stale POST does nothing and comes back to the page its
 * form was on. Time moves by the injected clock only.
 */

const PASSWORD = 'correct horse battery'
const WINDOW_MS = 10 * 60_000
let t: TestContext

beforeAll(async () => {
  t = await buildTestApp({ LOGIN_FAILURE_LIMIT: '3' })
})
afterAll(async () => {
  await t.close()
})

const reauthFor = (next: string) => `/reauth?next=${encodeURIComponent(next)}`

/** Lets the session's last confirmation fall out of the window. */
const goStale = () => t.clock.advance(WINDOW_MS + 1000)

/** "Confirm it's you" through the page, as a browser would after being sent there. */
async function confirm(s: BrowserSession, next: string, password = PASSWORD) {
  const page = await s.get(reauthFor(next))
  expect(page.statusCode).toBe(200)
  return s.post('/reauth', { password, next })
}

async function secretHashOf(id: string): Promise<string | null> {
  const row = await t.db.selectFrom('applications').select('secret_hash').where('id', '=', id).executeTakeFirstOrThrow()
  return row.secret_hash
}

async function events(userId: string, event: string): Promise<number> {
  const rows = await t.db.selectFrom('audit_events').select('id').where('user_id', '=', userId).where('event', '=', event).execute()
  return rows.length
}

describe('the /reauth page', () => {
  it('asks a logged-out visitor to log in first, and back', async () => {
    const res = await new BrowserSession(t.app).get(reauthFor('/applications'))
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe(`/login?next=${encodeURIComponent(reauthFor('/applications'))}`)
  })

  it('shows a password form carrying `next`, and follows only a local path', async () => {
    const s = await loggedInUser(t.app)
    const page = await s.get(reauthFor('/applications/new'))
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('Confirm it&#39;s you')
    expect(page.body).toContain('name="next" value="/applications/new"')
    expectAccessiblePage(page.body)
    for (const next of ['//evil.example/', 'https://evil.example/', '/\\evil.example']) {
      const res = await s.post('/reauth', { password: PASSWORD, next })
      expect(res.statusCode, next).toBe(303)
      expect(res.headers.location, next).toBe('/applications')
    }
  })

  it('needs the CSRF token', async () => {
    const s = await loggedInUser(t.app)
    await s.get('/reauth')
    const res = await s.post('/reauth', { _csrf: 'forged', password: PASSWORD, next: '/applications' })
    expect(res.statusCode).toBe(403)
  })
})

describe('a new client secret and deleting an application', () => {
  it('with a stale confirmation: the confirmation page and the POST go to /reauth, and nothing changes', async () => {
    const s = await loggedInUser(t.app)
    const app = await createApplicationViaConsole(s)
    const before = await secretHashOf(app.id)
    goStale()
    for (const action of ['secret', 'delete']) {
      const page = `/applications/${app.id}/${action}`
      const get = await s.get(page)
      expect(get.statusCode, page).toBe(303)
      expect(get.headers.location).toBe(reauthFor(page))
      const post = await s.post(page, {})
      expect(post.statusCode, page).toBe(303)
      // Never the POST replayed: back to the confirmation page its form was on.
      expect(post.headers.location).toBe(reauthFor(page))
    }
    expect(await secretHashOf(app.id)).toBe(before)
  })

  it('after the password at /reauth: the secret is regenerated, then the application deleted', async () => {
    const s = await loggedInUser(t.app)
    const app = await createApplicationViaConsole(s)
    const before = await secretHashOf(app.id)
    goStale()
    const page = `/applications/${app.id}/secret`
    const confirmed = await confirm(s, page)
    expect(confirmed.statusCode).toBe(303)
    expect(confirmed.headers.location).toBe(page)
    expect((await s.get(page)).statusCode).toBe(200)
    const regenerated = await s.post(page, {})
    expect(regenerated.statusCode).toBe(200)
    expect(await secretHashOf(app.id)).not.toBe(before)
    await s.get(`/applications/${app.id}/delete`)
    const deleted = await s.post(`/applications/${app.id}/delete`, {})
    expect(deleted.headers.location).toBe('/applications?deleted=1')
  })

  it('a log-in is a confirmation: nothing is asked right after it', async () => {
    const s = await loggedInUser(t.app)
    const app = await createApplicationViaConsole(s)
    expect((await s.get(`/applications/${app.id}/secret`)).statusCode).toBe(200)
    goStale()
    expect((await s.get(`/applications/${app.id}/secret`)).statusCode).toBe(303)
    await s.logIn(s.email)
    expect((await s.get(`/applications/${app.id}/secret`)).statusCode).toBe(200)
  })

  it('confirms one session only: another browser of the same account is still asked', async () => {
    const a = await loggedInUser(t.app)
    const b = new BrowserSession(t.app)
    await b.logIn(a.email)
    const app = await createApplicationViaConsole(a)
    goStale()
    await confirm(a, '/applications')
    expect((await a.get(`/applications/${app.id}/secret`)).statusCode).toBe(200)
    expect((await b.get(`/applications/${app.id}/secret`)).statusCode).toBe(303)
  })
})

describe('REAUTH_WINDOW_MINUTES', () => {
  it('holds for exactly the window from the log-in, then from the last confirmation', async () => {
    const s = await loggedInUser(t.app)
    const app = await createApplicationViaConsole(s)
    const page = `/applications/${app.id}/secret`
    t.clock.advance(WINDOW_MS)
    expect((await s.get(page)).statusCode).toBe(200)
    t.clock.advance(1)
    expect((await s.get(page)).statusCode).toBe(303)
    await confirm(s, page)
    t.clock.advance(WINDOW_MS)
    expect((await s.get(page)).statusCode).toBe(200)
    t.clock.advance(1)
    expect((await s.get(page)).statusCode).toBe(303)
  })

  it('is read from the configuration', async () => {
    const short = await buildTestApp({ REAUTH_WINDOW_MINUTES: '1' }, t.testDb)
    try {
      const s = await loggedInUser(short.app)
      const app = await createApplicationViaConsole(s)
      short.clock.advance(60_000)
      expect((await s.get(`/applications/${app.id}/secret`)).statusCode).toBe(200)
      short.clock.advance(1)
      expect((await s.get(`/applications/${app.id}/secret`)).statusCode).toBe(303)
      const page = await s.get(reauthFor('/applications'))
      expect(page.body).toContain('For the next 1 minutes')
    } finally {
      await short.close()
    }
  })
})

describe('wrong passwords', () => {
  it('are refused, recorded, and counted like failed log-ins (LOGIN_FAILURE_LIMIT, then 429 even for the right one)', async () => {
    const s = await loggedInUser(t.app)
    const userId = (await t.db.selectFrom('users').select('id').where('email', '=', s.email).executeTakeFirstOrThrow()).id
    goStale()
    for (let i = 0; i < 3; i++) {
      const res = await confirm(s, '/applications', 'not the password')
      expect(res.statusCode).toBe(400)
      expect(res.body).toContain('The password is not right.')
    }
    const limited = await confirm(s, '/applications')
    expect(limited.statusCode).toBe(429)
    expect(limited.headers['retry-after']).toBeDefined()
    expect(await events(userId, 'user.reauthentication_failed')).toBe(3)
    expect(await events(userId, 'user.reauthenticated')).toBe(0)
    // The Account pages' wrong current passwords share the count.
    await s.get('/account/password')
    const change = await s.post('/account/password', { current_password: PASSWORD, new_password: 'another fine password' })
    expect(change.statusCode).toBe(429)
    t.clock.advance(15 * 60_000)
    const ok = await confirm(s, '/applications')
    expect(ok.statusCode).toBe(303)
    expect(await events(userId, 'user.reauthenticated')).toBe(1)
  })
})

describe('the Account forms that ask for the current password', () => {
  it('count that password as the confirmation: a stale session changes its password without /reauth', async () => {
    const s = await loggedInUser(t.app)
    goStale()
    await s.get('/account/password')
    const res = await s.post('/account/password', { current_password: PASSWORD, new_password: 'another fine password' })
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe('/account?password_changed=1')
    await s.get('/account/email')
    const email = await s.post('/account/email', { current_password: 'another fine password', new_email: `new-${s.email}` })
    expect(email.statusCode).toBe(200)
  })
})

describe('the admin actions', () => {
  it('send a stale operator to /reauth and back to the confirmation page, having done nothing; then they work', async () => {
    const op = await loggedInUser(t.app)
    await t.db.updateTable('users').set({ is_operator: true }).where('email', '=', op.email).execute()
    const user = await createUser(t.db)
    goStale()
    const page = `/admin/users/${user.id}/suspend`
    // Pages that only show stay open.
    expect((await op.get(`/admin/users/${user.id}`)).statusCode).toBe(200)
    const get = await op.get(page)
    expect(get.headers.location).toBe(reauthFor(page))
    const post = await op.post(page, {})
    expect(post.statusCode).toBe(303)
    expect(post.headers.location).toBe(reauthFor(page))
    const row = () => t.db.selectFrom('users').select('suspended_at').where('id', '=', user.id).executeTakeFirstOrThrow()
    expect((await row()).suspended_at).toBeNull()

    const confirmed = await confirm(op, page)
    expect(confirmed.headers.location).toBe(page)
    await op.get(page)
    const done = await op.post(page, {})
    expect(done.headers.location).toBe(`/admin/users/${user.id}?done=suspended`)
    expect((await row()).suspended_at).not.toBeNull()
  })

  it('applies to the applications' + "' actions too", async () => {
    const op = await loggedInUser(t.app)
    await t.db.updateTable('users').set({ is_operator: true }).where('email', '=', op.email).execute()
    const owner = await loggedInUser(t.app)
    const app = await createApplicationViaConsole(owner)
    goStale()
    await op.get('/admin')
    const post = await op.post(`/admin/applications/${app.id}/verify`, {})
    expect(post.headers.location).toBe(reauthFor(`/admin/applications/${app.id}/verify`))
    const row = await t.db.selectFrom('applications').select('verified_at').where('id', '=', app.id).executeTakeFirstOrThrow()
    expect(row.verified_at).toBeNull()
  })
})

describe('second-factor changes', () => {
  it('with a stale confirmation: the pages and their forms go to /reauth, and nothing is set up', async () => {
    const s = await loggedInUser(t.app)
    const user = await t.db.selectFrom('users').select('id').where('email', '=', s.email).executeTakeFirstOrThrow()
    await s.get('/account/two-factor')
    goStale()
    for (const page of ['/account/two-factor', '/account/passkeys', '/account/two-factor/totp']) {
      const get = await s.get(page)
      expect(get.statusCode, page).toBe(303)
      expect(get.headers.location, page).toBe(reauthFor(page))
    }
    const start = await s.post('/account/two-factor/totp', {})
    expect(start.statusCode).toBe(303)
    expect(start.headers.location).toBe(reauthFor('/account/two-factor'))
    expect(await t.db.selectFrom('totp_enrolments').select('user_id').where('user_id', '=', user.id).execute()).toEqual([])
    for (const path of ['/account/two-factor/totp/off', '/account/two-factor/recovery-codes']) {
      const res = await s.post(path, { password: PASSWORD, code: '000000' })
      expect(res.headers.location, path).toBe(reauthFor('/account/two-factor'))
    }
    const remove = await s.post('/account/passkeys/remove', { id: 'x', password: PASSWORD })
    expect(remove.headers.location).toBe(reauthFor('/account/passkeys'))
    // The passkey script's endpoint answers JSON, saying where to confirm.
    const options = await s.post('/account/passkeys/registration-options', {})
    expect(options.statusCode).toBe(403)
    expect(options.json()).toMatchObject({ redirect: reauthFor('/account/passkeys') })
    expect(await t.db.selectFrom('webauthn_challenges').select('id_hash').where('user_id', '=', user.id).execute()).toEqual([])

    expect((await confirm(s, '/account/two-factor')).headers.location).toBe('/account/two-factor')
    expect((await s.get('/account/two-factor')).statusCode).toBe(200)
    expect((await s.post('/account/two-factor/totp', {})).headers.location).toBe('/account/two-factor/totp')
    expect((await s.post('/account/passkeys/registration-options', {})).statusCode).toBe(200)
  })
})

describe('confirming with an authenticator app', () => {
  it('offers the code beside the password, accepts a current code once, and records how', async () => {
    const s = await loggedInUser(t.app)
    const user = await t.db.selectFrom('users').select('id').where('email', '=', s.email).executeTakeFirstOrThrow()
    expect((await s.get(reauthFor('/account'))).body).not.toContain('name="code"')
    const { secret } = await enrolTotp(s, () => t.clock())
    goStale()
    const page = await s.get(reauthFor('/account/two-factor'))
    expect(page.body).toContain('name="code"')
    expectAccessiblePage(page.body)

    const wrong = await s.post('/reauth', { code: '000000', next: '/account/two-factor' })
    expect(wrong.statusCode).toBe(400)
    expect(wrong.body).toContain('That code is not right')
    expect(await events(user.id, 'user.reauthentication_failed')).toBe(1)
    expect((await s.get('/account/two-factor')).statusCode).toBe(303)

    t.clock.advance(STEP_MS)
    const code = totpCode(secret, t.clock())
    const confirmed = await s.post('/reauth', { code, next: '/account/two-factor' })
    expect(confirmed.statusCode).toBe(303)
    expect(confirmed.headers.location).toBe('/account/two-factor')
    expect((await s.get('/account/two-factor')).statusCode).toBe(200)
    const detail = await t.db
      .selectFrom('audit_events')
      .select('detail')
      .where('user_id', '=', user.id)
      .where('event', '=', 'user.reauthenticated')
      .executeTakeFirstOrThrow()
    expect(detail.detail).toBe('with an authenticator app code')

    // A code is accepted once (RFC 6238 5.2), here as at log-in: the same code, within its step, again.
    expect((await s.post('/reauth', { code, next: '/account/two-factor' })).statusCode).toBe(400)
  })
})
