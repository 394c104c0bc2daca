import type { LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, type TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { STEP_MS, enrolTotp, totpCode } from '../../helpers/totp.js'
import { DEVICE_COOKIE_MAX_AGE_SECONDS, PENDING_LOGIN_MAX_AGE_SECONDS } from '../../../src/accounts/index.js'

/*
 * Every cookie Gatehouse sets (src/http/cookies.ts, their one home): `__Host-` prefixed when
 * PUBLIC_URL is https, each with its attributes pinned as sent and as cleared; the session and
 * CSRF cookies rotated at log-in and log-out (OWASP Session Management Cheat Sheet), so nothing a
 * browser held before either moment, possibly planted by someone else, is valid after it.
 */

const PASSWORD = 'correct horse battery'

interface Cookie {
  name: string
  value: string
  secure?: boolean
  httpOnly?: boolean
  sameSite?: string
  path?: string
  domain?: string
  maxAge?: number
}
const cookie = (res: LightMyRequestResponse, name: string) => (res.cookies as Cookie[]).find((c) => c.name === name)

let https: TestContext
let http: TestContext
beforeAll(async () => {
  https = await buildTestApp({ PUBLIC_URL: 'https://auth.example.com' })
  http = await buildTestApp()
})
afterAll(async () => {
  await https.close()
  await http.close()
})

let users = 0
async function signedUp(t: TestContext): Promise<string> {
  const email = `cookies${++users}@example.com`
  const s = new BrowserSession(t.app)
  await s.get('/signup')
  expect((await s.post('/signup', { email, password: PASSWORD })).statusCode).toBe(303)
  return email
}

describe('over https', () => {
  it('names both cookies __Host- and sets them as the prefix requires: Secure, Path=/, no Domain', async () => {
    const s = new BrowserSession(https.app)
    const page = await s.get('/login')
    expect(cookie(page, '__Host-gatehouse_csrf')).toMatchObject({ secure: true, path: '/', httpOnly: true, sameSite: 'Lax' })
    expect(cookie(page, '__Host-gatehouse_csrf')?.domain).toBeUndefined()
    expect(cookie(page, 'gatehouse_csrf')).toBeUndefined()

    const res = await s.logIn(await signedUp(https))
    const session = cookie(res, '__Host-gatehouse_session')
    expect(session).toMatchObject({ secure: true, path: '/', httpOnly: true, sameSite: 'Lax', maxAge: 14 * 24 * 3600 })
    expect(session?.domain).toBeUndefined()
    expect(cookie(res, 'gatehouse_session')).toBeUndefined()
    const device = cookie(res, '__Host-gatehouse_device')
    expect(device).toMatchObject({ secure: true, path: '/', httpOnly: true, sameSite: 'Lax' })
    expect(device?.domain).toBeUndefined()
    expect((await s.get('/applications')).statusCode).toBe(200)
  })

  it('reads only the prefixed names: an unprefixed cookie, as a sibling subdomain could plant, is ignored', async () => {
    const s = new BrowserSession(https.app)
    await s.logIn(await signedUp(https))
    const id = s.cookies.get('__Host-gatehouse_session')!
    const unprefixed = await https.app.inject({ url: '/applications', headers: { cookie: `gatehouse_session=${id}` } })
    expect(unprefixed.statusCode).toBe(303)

    // A CSRF secret under the unprefixed name does not validate a token either.
    const page = await s.get('/applications')
    expect(page.statusCode).toBe(200)
    const secret = s.cookies.get('__Host-gatehouse_csrf')!
    const forged = await https.app.inject({
      method: 'POST',
      url: '/logout',
      headers: { cookie: `__Host-gatehouse_session=${id}; gatehouse_csrf=${secret}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `_csrf=${encodeURIComponent(s.lastCsrf!)}`,
    })
    expect(forged.statusCode).toBe(403)
  })

  it('clears the session cookie at log-out with the attributes a browser needs to accept it', async () => {
    const s = new BrowserSession(https.app)
    await s.logIn(await signedUp(https))
    await s.get('/applications')
    const res = await s.post('/logout', {})
    expect(res.statusCode).toBe(303)
    const cleared = cookie(res, '__Host-gatehouse_session')
    expect(cleared).toMatchObject({ value: '', secure: true, path: '/' })
    expect(cleared?.domain).toBeUndefined()
    expect(s.cookies.has('__Host-gatehouse_session')).toBe(false)
  })

  it('keeps the plain names when COOKIE_SECURE=false, since a browser refuses __Host- without Secure', async () => {
    const insecure = await buildTestApp({ PUBLIC_URL: 'https://auth.example.com', COOKIE_SECURE: 'false' }, https.testDb)
    try {
      const page = await insecure.app.inject('/login')
      expect(cookie(page, 'gatehouse_csrf')).toMatchObject({ path: '/' })
      expect(cookie(page, '__Host-gatehouse_csrf')).toBeUndefined()
    } finally {
      await insecure.close()
    }
  })
})

describe('over plain http', () => {
  it('keeps the names unprefixed: a browser refuses __Host- there', async () => {
    const s = new BrowserSession(http.app)
    const page = await s.get('/login')
    expect(cookie(page, 'gatehouse_csrf')).toBeDefined()
    const res = await s.logIn(await signedUp(http))
    expect(cookie(res, 'gatehouse_session')).toBeDefined()
    expect([...s.cookies.keys()].sort()).toEqual(['gatehouse_csrf', 'gatehouse_device', 'gatehouse_session'])
  })
})

describe.each([
  ['https', () => https, '__Host-gatehouse_csrf', '__Host-gatehouse_session'],
  ['http', () => http, 'gatehouse_csrf', 'gatehouse_session'],
])('rotation over %s', (_, context, CSRF, SESSION) => {
  it('sets a new CSRF secret at log-in: a token issued before no longer validates', async () => {
    const t = context()
    const email = await signedUp(t)
    const s = new BrowserSession(t.app)
    await s.get('/login')
    const before = { secret: s.cookies.get(CSRF)!, token: s.lastCsrf! }
    const res = await s.post('/login', { email, password: PASSWORD })
    expect(res.statusCode).toBe(303)
    const rotated = cookie(res, CSRF)
    expect(rotated?.value).toBeTruthy()
    expect(rotated?.value).not.toBe(before.secret)

    // A form of the logged-out page (or one an attacker prepared with a planted secret) is dead.
    expect((await s.post('/logout', { _csrf: before.token })).statusCode).toBe(403)
    expect((await s.get('/applications')).statusCode).toBe(200)
    // The pages after log-in carry tokens of the new secret.
    expect((await s.post('/logout', {})).statusCode).toBe(303)
  })

  it('sets a new CSRF secret at log-out: a token of the logged-in pages no longer validates', async () => {
    const t = context()
    const email = await signedUp(t)
    const s = new BrowserSession(t.app)
    await s.logIn(email)
    await s.get('/applications')
    const before = { secret: s.cookies.get(CSRF)!, token: s.lastCsrf! }
    const res = await s.post('/logout', {})
    expect(res.statusCode).toBe(303)
    expect(cookie(res, CSRF)?.value).not.toBe(before.secret)
    expect(s.cookies.get(CSRF)).not.toBe(before.secret)

    expect((await s.post('/login', { email, password: PASSWORD, _csrf: before.token })).statusCode).toBe(403)
    expect(s.cookies.has(SESSION)).toBe(false)
    await s.logIn(email)
  })

  it('issues a new session id at log-in; the one the browser held before is dead', async () => {
    const t = context()
    const email = await signedUp(t)
    const s = new BrowserSession(t.app)
    s.cookies.set(SESSION, 'planted-by-attacker')
    await s.logIn(email)
    const first = s.cookies.get(SESSION)!
    expect(first).not.toBe('planted-by-attacker')
    await s.logIn(email)
    const second = s.cookies.get(SESSION)!
    expect(second).not.toBe(first)
    const stale = await t.app.inject({ url: '/applications', headers: { cookie: `${SESSION}=${first}` } })
    expect(stale.statusCode).toBe(303)
    const live = await t.app.inject({ url: '/applications', headers: { cookie: `${SESSION}=${second}` } })
    expect(live.statusCode).toBe(200)
  })
})

/** The attributes of the Set-Cookie header for `name`, as sent: everything after `name=value; `. */
function attributes(res: LightMyRequestResponse, name: string): string | undefined {
  const header = res.headers['set-cookie']
  const lines = header === undefined ? [] : Array.isArray(header) ? header : [header]
  const line = lines.find((l) => l.startsWith(`${name}=`))
  return line?.slice(line.indexOf(';') + 2)
}

/** Each cookie Gatehouse sets, and each it clears, through the pages a browser uses (docs/applications.md "Console", docs/accounts.md "Passkeys", "Two-factor authentication"). */
async function everyCookie(t: TestContext, prefix: string) {
  const name = (base: string) => `${prefix}gatehouse_${base}`
  const seen: Record<string, string | undefined> = {}
  const s = new BrowserSession(t.app)
  seen['csrf'] = attributes(await s.get('/login'), name('csrf'))
  seen['webauthn'] = attributes(await s.postJson('/login/passkey/options', {}), name('webauthn'))
  seen['webauthn cleared'] = attributes(await s.postJson('/login/passkey', { response: {} }), name('webauthn'))

  const email = `every-cookie${++users}@example.com`
  // Signs up and verifies the address (adding a factor asks for it), then logs in again to see that response's cookies.
  await new BrowserSession(t.app).signUpAndLogIn(email, PASSWORD)
  await s.get('/login')
  const loggedIn = await s.logIn(email)
  seen['session'] = attributes(loggedIn, name('session'))
  seen['device'] = attributes(loggedIn, name('device'))
  const { secret } = await enrolTotp(s, () => t.clock())
  t.clock.advance(STEP_MS)
  await s.get('/applications')
  seen['session cleared'] = attributes(await s.post('/logout', {}), name('session'))

  await s.get('/login')
  seen['pending log-in'] = attributes(await s.logIn(email), name('pending_login'))
  await s.get('/login/second-factor')
  const code = await s.post('/login/second-factor', { code: totpCode(secret, t.clock()) })
  expect(code.statusCode).toBe(303)
  seen['pending log-in cleared'] = attributes(code, name('pending_login'))
  return seen
}

describe.each([
  ['https', () => https, '__Host-', '; Secure'],
  ['http', () => http, '', ''],
])('every cookie over %s, as set and as cleared', (_, context, prefix, secure) => {
  it('has the name and attributes the one cookie module gives it', async () => {
    const cleared = 'Max-Age=0; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly' + secure
    expect(await everyCookie(context(), prefix)).toEqual({
      csrf: `Path=/; HttpOnly${secure}; SameSite=Lax`,
      webauthn: `Max-Age=300; Path=/; HttpOnly${secure}; SameSite=Strict`,
      'webauthn cleared': `${cleared}; SameSite=Strict`,
      session: `Max-Age=${14 * 24 * 3600}; Path=/; HttpOnly${secure}; SameSite=Lax`,
      device: `Max-Age=${DEVICE_COOKIE_MAX_AGE_SECONDS}; Path=/; HttpOnly${secure}; SameSite=Lax`,
      'session cleared': `${cleared}; SameSite=Lax`,
      'pending log-in': `Max-Age=${PENDING_LOGIN_MAX_AGE_SECONDS}; Path=/; HttpOnly${secure}; SameSite=Lax`,
      'pending log-in cleared': `${cleared}; SameSite=Lax`,
    })
  })
})
