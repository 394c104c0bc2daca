import { describe, expect, it } from 'vitest'
import { SESSION_COOKIE } from '../../../src/http/session.js'
import { buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { STEP_MS, enrolTotp, secretOnPage, totpCode } from '../../helpers/totp.js'
import { testAppFile } from '../../helpers/file-set-up.js'

/*
 * Two-factor authentication (docs/accounts.md "Two-factor authentication"): the authenticator
 * app's set-up and confirmation, the log-in's second step bound to the pending log-in, replay
 * and the ±1 step window, failures counted, recovery codes single-use and regenerated, turning
 * the app off. Codes are computed from the secret the page shows, at the app's clock.
 */

const PASSWORD = 'correct horse battery'
const { t } = testAppFile()

let n = 0
const browser = () => new BrowserSession(t.app, `198.51.100.${++n}`)
const now = () => t.clock()
/** A new time step, so that the next code is not a replay of the last one accepted. */
const nextStep = () => t.clock.advance(STEP_MS)
const userId = async (email: string) =>
  (await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()).id

/** A browser that logged in with the password and was sent to the second step. */
async function passwordStep(email: string, next?: string): Promise<BrowserSession> {
  const s = browser()
  const res = await s.logIn(email, PASSWORD, next)
  expect(res.headers.location).toBe(`/login/second-factor${next ? `?next=${encodeURIComponent(next)}` : ''}`)
  expect(s.cookies.has(SESSION_COOKIE)).toBe(false)
  await s.get(String(res.headers.location))
  return s
}

async function enrolled(email: string) {
  const s = await browser().signUpAndLogIn(email, PASSWORD)
  const { secret, recoveryCodes } = await enrolTotp(s, now)
  nextStep()
  return { s, secret, recoveryCodes }
}

describe('Setting up an authenticator app', () => {
  it('shows a QR code and the secret, refuses a wrong code, and confirms with a current one', async () => {
    const s = await browser().signUpAndLogIn('enrol@example.com', PASSWORD)
    expect((await s.get('/account')).body).toContain('href="/account/two-factor"')
    const status = await s.get('/account/two-factor')
    expect(status.body).toContain('Set up an authenticator app')
    await s.post('/account/two-factor/totp', {})
    const page = await s.get('/account/two-factor/totp')
    expect(page.statusCode).toBe(200)
    expect(page.body).toMatch(/<svg role="img" aria-label="[^"]+"/)
    expect(page.body).not.toContain('<script')
    const secret = secretOnPage(page.body)
    expect(secret).toMatch(/^[A-Z2-7]{32}$/)

    const wrong = await s.post('/account/two-factor/totp/confirm', {
      code: totpCode(secret, new Date(now().getTime() + 5 * STEP_MS)),
      password: PASSWORD,
    })
    expect(wrong.statusCode).toBe(400)
    expect(wrong.body).toContain('That code is not right')
    const ok = await s.post('/account/two-factor/totp/confirm', { code: totpCode(secret, now()), password: PASSWORD })
    expect(ok.statusCode).toBe(200)
    expect(ok.body.match(/<li><code>[a-z2-9]{5}-[a-z2-9]{5}<\/code><\/li>/g)).toHaveLength(10)

    const id = await userId('enrol@example.com')
    const user = await t.db.selectFrom('users').select('second_factor').where('id', '=', id).executeTakeFirstOrThrow()
    expect(user.second_factor).toBe(true)
    expect(t.mailbox.last('enrol@example.com').subject).toContain('An authenticator app was set up')
    const events = await t.db.selectFrom('audit_events').select('event').where('user_id', '=', id).execute()
    expect(events.map((e) => e.event)).toContain('user.totp_enabled')
    expect((await s.get('/account/two-factor')).body).toContain('10</strong> of 10 left')
  })

  it('never stores the secret or the recovery codes in plain text', async () => {
    const { secret, recoveryCodes } = await enrolled('sealed@example.com')
    const id = await userId('sealed@example.com')
    const row = await t.db.selectFrom('totp_secrets').selectAll().where('user_id', '=', id).executeTakeFirstOrThrow()
    expect(row.secret_sealed).toMatch(/^v1\./)
    expect(JSON.stringify(row)).not.toContain(secret)
    expect(JSON.stringify(row).toLowerCase()).not.toContain(secret.toLowerCase())
    const codes = await t.db.selectFrom('recovery_codes').selectAll().where('user_id', '=', id).execute()
    expect(codes).toHaveLength(10)
    const stored = JSON.stringify(codes)
    for (const code of recoveryCodes) {
      expect(stored).not.toContain(code)
      expect(stored).not.toContain(code.replace('-', ''))
    }
  })

  it('an unconfirmed set-up expires after 10 minutes', async () => {
    const s = await browser().signUpAndLogIn('expire@example.com', PASSWORD)
    await s.get('/account/two-factor')
    await s.post('/account/two-factor/totp', {})
    const secret = secretOnPage((await s.get('/account/two-factor/totp')).body)
    t.clock.advance(11 * 60_000)
    // Past the re-authentication window too (docs/accounts.md "Re-authentication"): confirmed again first.
    await s.get('/reauth')
    expect((await s.post('/reauth', { password: PASSWORD, next: '/account/two-factor' })).statusCode).toBe(303)
    const late = await s.post('/account/two-factor/totp/confirm', { code: totpCode(secret, now()), password: PASSWORD })
    expect(late.headers.location).toBe('/account/two-factor?enrolment_expired=1')
  })
})

describe('The log-in with a second factor', () => {
  it('gives no session for the password alone, and one with the code, recording the methods', async () => {
    const { secret } = await enrolled('login2fa@example.com')
    const s = await passwordStep('login2fa@example.com', '/account')
    expect((await s.get('/applications')).headers.location).toBe('/login?next=%2Fapplications')
    await s.get('/login/second-factor?next=%2Faccount')
    const done = await s.post('/login/second-factor', { code: totpCode(secret, now()), next: '/account' })
    expect(done.statusCode).toBe(303)
    expect(done.headers.location).toBe('/account')
    expect(s.cookies.has(SESSION_COOKIE)).toBe(true)
    expect((await s.get('/account')).statusCode).toBe(200)
    const session = await t.db
      .selectFrom('sessions')
      .select('amr')
      .where('user_id', '=', await userId('login2fa@example.com'))
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow()
    expect(session.amr).toEqual(['pwd', 'otp', 'mfa'])
    const logged = await t.db
      .selectFrom('audit_events')
      .select(['event', 'detail'])
      .where('event', '=', 'user.logged_in')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow()
    expect(logged.detail).toBe('Password and an authenticator app code')
  })

  it('a device cookie never skips the second step', async () => {
    const { secret } = await enrolled('device2fa@example.com')
    const s = await passwordStep('device2fa@example.com')
    await s.post('/login/second-factor', { code: totpCode(secret, now()) })
    expect(s.cookies.has('gatehouse_device')).toBe(true)
    await s.get('/account')
    await s.post('/logout', {})
    const again = await s.logIn('device2fa@example.com', PASSWORD)
    expect(again.headers.location).toBe('/login/second-factor')
    expect(s.cookies.has(SESSION_COOKIE)).toBe(false)
  })

  it('accepts a code once (replay refused) and within one step either side', async () => {
    const { secret } = await enrolled('replay@example.com')
    const code = totpCode(secret, now())
    const first = await passwordStep('replay@example.com')
    expect((await first.post('/login/second-factor', { code })).headers.location).toBe('/applications')
    const second = await passwordStep('replay@example.com')
    const replayed = await second.post('/login/second-factor', { code })
    expect(replayed.statusCode).toBe(401)

    // Two steps on: the previous step's code is accepted, the one before it is not.
    t.clock.advance(2 * STEP_MS)
    const tooOld = await second.post('/login/second-factor', { code: totpCode(secret, new Date(now().getTime() - 2 * STEP_MS)) })
    expect(tooOld.statusCode).toBe(401)
    const ahead = await second.post('/login/second-factor', { code: totpCode(secret, new Date(now().getTime() + STEP_MS)) })
    expect(ahead.headers.location).toBe('/applications')
    // The next step accepted: now's code is older than it, so refused.
    const third = await passwordStep('replay@example.com')
    expect((await third.post('/login/second-factor', { code: totpCode(secret, now()) })).statusCode).toBe(401)
    const previous = await passwordStep('replay@example.com')
    expect((await previous.post('/login/second-factor', { code: totpCode(secret, new Date(now().getTime() - STEP_MS)) })).statusCode).toBe(
      401,
    )
  })

  it('one code, or one recovery code, sent by two browsers at once logs in only one', async () => {
    const { secret, recoveryCodes } = await enrolled('race@example.com')
    for (const code of [totpCode(secret, now()), recoveryCodes[0]!]) {
      const [a, b] = [await passwordStep('race@example.com'), await passwordStep('race@example.com')]
      const answers = await Promise.all([a.post('/login/second-factor', { code }), b.post('/login/second-factor', { code })])
      expect(answers.map((r) => r.statusCode).sort()).toEqual([303, 401])
      nextStep()
    }
  })

  it('ends the pending log-in after 5 wrong codes, counts them with the password failures, and expires in 5 minutes', async () => {
    const { secret } = await enrolled('guess@example.com')
    const s = await passwordStep('guess@example.com')
    const wrong = totpCode(secret, new Date(now().getTime() + 10 * STEP_MS))
    for (let i = 0; i < 4; i++) expect((await s.post('/login/second-factor', { code: wrong })).statusCode).toBe(401)
    const fifth = await s.post('/login/second-factor', { code: wrong })
    expect(fifth.headers.location).toBe('/login?second_factor=expired')
    expect((await s.get('/login?second_factor=expired')).body).toContain('Log in again')
    expect((await s.post('/login/second-factor', { code: totpCode(secret, now()) })).headers.location).toBe('/login?second_factor=expired')

    // Five more from the same address fill LOGIN_FAILURE_LIMIT (10) for the account there.
    const again = new BrowserSession(t.app, s.remoteAddress)
    await again.logIn('guess@example.com', PASSWORD)
    await again.get('/login/second-factor')
    for (let i = 0; i < 5; i++) await again.post('/login/second-factor', { code: wrong })
    await again.get('/login')
    const refused = await again.post('/login', { email: 'guess@example.com', password: PASSWORD })
    expect(refused.statusCode).toBe(429)
    const failures = await t.db
      .selectFrom('audit_events')
      .select('detail')
      .where('event', '=', 'user.login_failed')
      .where('user_id', '=', await userId('guess@example.com'))
      .execute()
    expect(failures.filter((f) => f.detail === 'Right password, wrong second-factor code')).toHaveLength(10)

    const late = await passwordStep('guess@example.com')
    t.clock.advance(5 * 60_000 + 1)
    expect((await late.post('/login/second-factor', { code: totpCode(secret, now()) })).headers.location).toBe(
      '/login?second_factor=expired',
    )
    expect((await late.get('/login/second-factor')).headers.location).toBe('/login?second_factor=expired')
  })

  it('a password change ends every log-in waiting for its second factor', async () => {
    const { s, secret } = await enrolled('waiting@example.com')
    const waiting = await passwordStep('waiting@example.com')
    await s.get('/account/password')
    expect((await s.post('/account/password', { current_password: PASSWORD, new_password: 'a brand new passphrase' })).statusCode).toBe(303)
    expect((await waiting.post('/login/second-factor', { code: totpCode(secret, now()) })).headers.location).toBe(
      '/login?second_factor=expired',
    )
  })

  it('without a pending log-in, the second step sends back to the log-in page', async () => {
    const s = browser()
    expect((await s.get('/login/second-factor?next=%2Faccount')).headers.location).toBe('/login?second_factor=expired&next=%2Faccount')
    await s.get('/login')
    expect((await s.post('/login/second-factor', { code: '123456' })).headers.location).toBe('/login?second_factor=expired')
  })
})

describe('Recovery codes', () => {
  it('each logs in once, and the owner is told how many are left', async () => {
    const { recoveryCodes } = await enrolled('recover@example.com')
    const code = recoveryCodes[0]!
    const s = await passwordStep('recover@example.com')
    const done = await s.post('/login/second-factor', { code: ` ${code.toUpperCase()} ` })
    expect(done.headers.location).toBe('/applications')
    const mail = t.mailbox.last('recover@example.com')
    expect(mail.subject).toContain('A recovery code was used')
    expect(mail.text).toContain('9 codes are left')
    const session = await t.db
      .selectFrom('sessions')
      .select('amr')
      .where('user_id', '=', await userId('recover@example.com'))
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow()
    expect(session.amr).toEqual(['pwd', 'otp', 'mfa'])

    const again = await passwordStep('recover@example.com')
    expect((await again.post('/login/second-factor', { code })).statusCode).toBe(401)
    expect((await again.post('/login/second-factor', { code: recoveryCodes[1]!.replace('-', '') })).headers.location).toBe('/applications')
  })

  it('regenerating needs the password and a current factor, and replaces every code', async () => {
    const { s, secret, recoveryCodes } = await enrolled('regen@example.com')
    await s.get('/account/two-factor')
    const wrongPassword = await s.post('/account/two-factor/recovery-codes', {
      password: 'not the password',
      code: totpCode(secret, now()),
    })
    expect(wrongPassword.statusCode).toBe(400)
    expect(wrongPassword.body).toContain('The password is not right.')
    const wrongCode = await s.post('/account/two-factor/recovery-codes', { password: PASSWORD, code: '000000' })
    expect(wrongCode.statusCode).toBe(400)
    const done = await s.post('/account/two-factor/recovery-codes', { password: PASSWORD, code: recoveryCodes[0]! })
    expect(done.statusCode).toBe(200)
    const fresh = [...done.body.matchAll(/<li><code>([a-z2-9-]{11})<\/code><\/li>/g)].map((m) => m[1]!)
    expect(fresh).toHaveLength(10)
    expect(fresh.some((c) => recoveryCodes.includes(c))).toBe(false)
    expect(t.mailbox.last('regen@example.com').subject).toContain('New recovery codes were generated')

    const old = await passwordStep('regen@example.com')
    expect((await old.post('/login/second-factor', { code: recoveryCodes[1]! })).statusCode).toBe(401)
    expect((await old.post('/login/second-factor', { code: fresh[0]! })).headers.location).toBe('/applications')
    const events = await t.db
      .selectFrom('audit_events')
      .select('event')
      .where('user_id', '=', await userId('regen@example.com'))
      .execute()
    expect(events.map((e) => e.event)).toContain('user.recovery_codes_regenerated')
  })
})

describe('Turning the authenticator app off', () => {
  it('needs the password and a current code, mails the owner, and log-ins no longer ask', async () => {
    const { s, secret } = await enrolled('off@example.com')
    await s.get('/account/two-factor')
    expect((await s.post('/account/two-factor/totp/off', { password: PASSWORD, code: '' })).statusCode).toBe(400)
    expect((await s.post('/account/two-factor/totp/off', { password: 'wrong password', code: totpCode(secret, now()) })).statusCode).toBe(
      400,
    )
    const done = await s.post('/account/two-factor/totp/off', { password: PASSWORD, code: totpCode(secret, now()) })
    expect(done.headers.location).toBe('/account/two-factor?totp_off=1')
    expect(t.mailbox.last('off@example.com').subject).toContain('The authenticator app was turned off')
    const id = await userId('off@example.com')
    expect((await t.db.selectFrom('users').select('second_factor').where('id', '=', id).executeTakeFirstOrThrow()).second_factor).toBe(
      false,
    )
    expect(await t.db.selectFrom('recovery_codes').selectAll().where('user_id', '=', id).execute()).toHaveLength(0)
    const events = await t.db.selectFrom('audit_events').select('event').where('user_id', '=', id).execute()
    expect(events.map((e) => e.event)).toContain('user.totp_disabled')
    const next = browser()
    expect((await next.logIn('off@example.com', PASSWORD)).headers.location).toBe('/applications')
  })
})

describe('With another key', () => {
  it('no code of the app matches (no error), and a recovery code still logs in', async () => {
    const { secret, recoveryCodes } = await enrolled('rekeyed@example.com')
    const other = await buildTestApp({ SECRET_KEY: 'another key-encryption key, also 32 characters' }, t.testDb)
    try {
      other.clock.set(now())
      const s = new BrowserSession(other.app, '203.0.113.10')
      expect((await s.logIn('rekeyed@example.com', PASSWORD)).headers.location).toBe('/login/second-factor')
      await s.get('/login/second-factor')
      expect((await s.post('/login/second-factor', { code: totpCode(secret, now()) })).statusCode).toBe(401)
      expect((await s.post('/login/second-factor', { code: recoveryCodes[0]! })).headers.location).toBe('/applications')
    } finally {
      await other.close()
    }
  })
})
