import { beforeAll, describe, expect, it } from 'vitest'
import { SESSION_COOKIE } from '../../../src/http/session.js'
import { sha256Hex } from '../../../src/lib/crypto.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { testAppFile } from '../../helpers/file-set-up.js'

const { t } = testAppFile()

const PASSWORD = 'correct horse battery'

/** Each browser from its own address, so the per-IP log-in limit (rate-limit.test.ts) stays out of the way. */
let addresses = 0
function browser(): BrowserSession {
  addresses++
  return new BrowserSession(t.app, `192.0.2.${addresses}`)
}

/** The page without what legitimately differs between two requests: CSRF token and echoed email. */
function normalised(body: string, email: string): string {
  return body.replace(/name="_csrf" value="[^"]*"/g, 'name="_csrf" value=""').replaceAll(email, '<email>')
}

describe('sign up', () => {
  it('shows a labelled form', async () => {
    const res = await browser().get('/signup')
    expect(res.statusCode).toBe(200)
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.body).toContain('<label for="email">')
    expect(res.body).toContain('<label for="password">')
    expect(res.body.match(/<h1[\s>]/g)).toHaveLength(1)
  })

  it('creates the account with an argon2id hash, without logging in', async () => {
    const s = browser()
    await s.get('/signup')
    const res = await s.post('/signup', { email: '  New.Person@Example.com ', password: PASSWORD })
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe('/login?signed_up=1&email=new.person%40example.com')
    expect(s.cookies.has(SESSION_COOKIE)).toBe(false)
    const user = await t.db.selectFrom('users').selectAll().where('email', '=', 'new.person@example.com').executeTakeFirstOrThrow()
    expect(user.password_hash).toMatch(/^\$argon2id\$/)
    expect(user.password_hash).not.toContain(PASSWORD)
  })

  it.each([
    [{ email: 'not-an-email', password: PASSWORD }, 'email', 'Enter a valid email address.'],
    [{ email: 'short@example.com', password: 'short' }, 'password', 'Password must be at least 8 characters.'],
    [{ email: 'long@example.com', password: 'p'.repeat(257) }, 'password', 'Password must be at most 256 characters.'],
  ])('refuses %o with a message beside the field', async (fields, field, message) => {
    const s = browser()
    await s.get('/signup')
    const res = await s.post('/signup', fields)
    expect(res.statusCode).toBe(400)
    expect(res.body).toContain(`id="${field}-error">${message}`)
    if (field === 'password') expect(res.body).toContain(`value="${fields.email}"`)
  })

  it('answers the same for a registered and an unregistered email', async () => {
    await browser().signUpAndLogIn('taken@example.com')
    const answers = []
    for (const email of ['taken@example.com', 'fresh@example.com']) {
      const s = browser()
      await s.get('/signup')
      const res = await s.post('/signup', { email, password: 'a different password' })
      answers.push({
        status: res.statusCode,
        location: String(res.headers.location).replace(encodeURIComponent(email), '<email>'),
        body: res.body,
        session: s.cookies.has(SESSION_COOKIE),
      })
    }
    expect(answers[0]).toEqual(answers[1])
    expect(answers[0]).toMatchObject({ status: 303, session: false })
    // The registered account keeps its password.
    await browser().logIn('taken@example.com', PASSWORD)
  })
})

describe('log in', () => {
  beforeAll(async () => {
    const s = browser()
    await s.get('/signup')
    await s.post('/signup', { email: 'user@example.com', password: PASSWORD })
  })

  it('logs in with the right password and lands on Your Applications', async () => {
    const s = browser()
    const res = await s.logIn('user@example.com')
    expect(res.headers.location).toBe('/applications')
    const cookie = (res.cookies as Array<{ name: string; httpOnly?: boolean; sameSite?: string; path?: string; domain?: string }>).find(
      (c) => c.name === SESSION_COOKIE,
    )
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' })
    expect(cookie?.domain).toBeUndefined()
    // PUBLIC_URL is http here: a Secure cookie would never come back.
    expect((cookie as { secure?: boolean } | undefined)?.secure).toBeFalsy()
    const page = await s.get('/applications')
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('user@example.com')
    // The cookie is the only copy of the session id: the database holds its digest.
    const id = s.cookies.get(SESSION_COOKIE)!
    expect(await t.db.selectFrom('sessions').select('id_hash').where('id_hash', '=', sha256Hex(id)).executeTakeFirst()).toBeDefined()
  })

  it('accepts the email in any case', async () => {
    await browser().logIn('USER@Example.COM')
  })

  it('returns to the page that asked for log-in, and only to a local one', async () => {
    const s = browser()
    expect((await s.logIn('user@example.com', PASSWORD, '/applications/new')).headers.location).toBe('/applications/new')
    const evil = browser()
    await evil.get('/login')
    const res = await evil.post('/login', { email: 'user@example.com', password: PASSWORD, next: '//evil.example.com/x' })
    expect(res.headers.location).toBe('/applications')
  })

  it('refuses a wrong password with a generic message and no session', async () => {
    const s = browser()
    await s.get('/login')
    const res = await s.post('/login', { email: 'user@example.com', password: 'wrong password!' })
    expect(res.statusCode).toBe(401)
    expect(res.body).toContain('Incorrect email or password.')
    expect(res.body).toContain('value="user@example.com"')
    expect(s.cookies.has(SESSION_COOKIE)).toBe(false)
    expect((await s.get('/applications')).statusCode).toBe(303)
  })

  it('answers the same for an unknown email as for a wrong password', async () => {
    const answers = []
    for (const email of ['user@example.com', 'nobody@example.com']) {
      const s = browser()
      await s.get('/login')
      const res = await s.post('/login', { email, password: 'wrong password!' })
      answers.push({ status: res.statusCode, body: normalised(res.body, email), cookies: [...s.cookies.keys()].sort() })
    }
    expect(answers[0]).toEqual(answers[1])
  })
})

describe('log out', () => {
  it('ends the session in the database, not only in the browser', async () => {
    const s = await browser().signUpAndLogIn('leaver@example.com')
    const oldCookie = s.cookieHeader
    await s.get('/applications')
    const res = await s.post('/logout', {})
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe('/login')
    expect(s.cookies.has(SESSION_COOKIE)).toBe(false)
    const after = await s.get('/applications')
    expect(after.statusCode).toBe(303)
    expect(after.headers.location).toBe('/login?next=%2Fapplications')
    // Replaying the old cookie does not bring the session back.
    const replay = await t.app.inject({ url: '/applications', headers: { cookie: oldCookie } })
    expect(replay.statusCode).toBe(303)
  })
})

describe('CSRF', () => {
  it('refuses a log-in, sign-up or log-out POST without the token (403)', async () => {
    const s = await browser().signUpAndLogIn('csrf@example.com')
    const fresh = browser()
    await fresh.get('/login')
    const login = await fresh.post('/login', { email: 'csrf@example.com', password: PASSWORD, _csrf: null })
    expect(login.statusCode).toBe(403)
    expect(login.body).toContain('This form has expired')
    expect(fresh.cookies.has(SESSION_COOKIE)).toBe(false)

    await fresh.get('/signup')
    expect((await fresh.post('/signup', { email: 'forged@example.com', password: PASSWORD, _csrf: null })).statusCode).toBe(403)
    expect(await t.db.selectFrom('users').select('id').where('email', '=', 'forged@example.com').executeTakeFirst()).toBeUndefined()

    await s.get('/applications')
    expect((await s.post('/logout', { _csrf: null })).statusCode).toBe(403)
    expect((await s.post('/logout', { _csrf: 'forged' })).statusCode).toBe(403)
    expect((await s.get('/applications')).statusCode).toBe(200)
  })

  it("refuses another browser's token", async () => {
    const victim = await browser().signUpAndLogIn('victim@example.com')
    const attacker = browser()
    await attacker.get('/login')
    await victim.get('/applications')
    expect((await victim.post('/logout', { _csrf: attacker.lastCsrf ?? '' })).statusCode).toBe(403)
  })
})

describe('session fixation', () => {
  it('issues a new session id at log-in; the previous id stops working', async () => {
    const s = await browser().signUpAndLogIn('fixed@example.com')
    const first = s.cookies.get(SESSION_COOKIE)!
    await s.logIn('fixed@example.com')
    const second = s.cookies.get(SESSION_COOKIE)!
    expect(second).not.toBe(first)
    const stale = await t.app.inject({ url: '/applications', headers: { cookie: `${SESSION_COOKIE}=${first}` } })
    expect(stale.statusCode).toBe(303)
    const live = await t.app.inject({ url: '/applications', headers: { cookie: `${SESSION_COOKIE}=${second}` } })
    expect(live.statusCode).toBe(200)
  })

  it('never adopts a session id planted before log-in', async () => {
    const s = browser()
    s.cookies.set(SESSION_COOKIE, 'planted-by-attacker')
    await s.logIn('fixed@example.com')
    expect(s.cookies.get(SESSION_COOKIE)).not.toBe('planted-by-attacker')
    const planted = await t.app.inject({ url: '/applications', headers: { cookie: `${SESSION_COOKIE}=planted-by-attacker` } })
    expect(planted.statusCode).toBe(303)
  })

  it('expires sessions after SESSION_TTL_HOURS', async () => {
    const s = await browser().signUpAndLogIn('expiring@example.com')
    expect((await s.get('/applications')).statusCode).toBe(200)
    t.clock.advance(t.config.sessionTtlMs + 1000)
    expect((await s.get('/applications')).statusCode).toBe(303)
    // The janitor clears the expired row away, so sessions do not pile up (src/limits/janitor.ts).
    const user = await t.db.selectFrom('users').select('id').where('email', '=', 'expiring@example.com').executeTakeFirstOrThrow()
    const sessions = () => t.db.selectFrom('sessions').select('expires_at').where('user_id', '=', user.id).execute()
    expect(await sessions()).toHaveLength(1)
    await browser().logIn('expiring@example.com')
    expect(await sessions()).toHaveLength(2)
    await t.deps.janitor.runOnce()
    const left = await sessions()
    expect(left).toHaveLength(1)
    expect(left[0]!.expires_at.getTime()).toBeGreaterThan(t.clock().getTime())
  })
})
