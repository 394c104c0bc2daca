import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SESSION_COOKIE } from '../../../src/http/session.js'
import { verifyPassword } from '../../../src/lib/passwords.js'
import { buildTestApp, type TestContext } from '../../helpers/app.js'
import { captureLog } from '../../helpers/capture-log.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { createApplicationViaConsole } from '../../helpers/console.js'
import { freePort } from '../../helpers/gatehouse-process.js'
import { SMTP_PASSWORD, type TestSmtpServer, mailLinkTo, mailLinks, startSmtpServer } from '../../helpers/smtp.js'

/*
 * Mail over a real SMTP exchange (docs/accounts.md "Mail"): an SMTP server in this process, Gatehouse pointed at
 * it with SMTP_URL (user and password), and the received mails' links followed over HTTP. Single
 * use, expiry (the injected clock) and the same-answer rules are checked on what arrives.
 */

const PASSWORD = 'correct horse battery'
const HOUR = 3600_000
let smtp: TestSmtpServer
let t: TestContext
const { stream: logStream, lines: logLines } = captureLog()

beforeAll(async () => {
  smtp = await startSmtpServer()
  t = await buildTestApp(
    {
      SMTP_URL: smtp.url,
      MAIL_FROM: 'Team Auth <auth@gatehouse.test>',
      SERVICE_NAME: 'Team Auth',
      PASSWORD_RESET_LIMIT: '3',
      LOG_LEVEL: 'info',
    },
    undefined,
    { realMailer: true, logStream },
  )
})
afterAll(async () => {
  await t?.close()
  await smtp?.close()
})

let n = 0
const browser = () => new BrowserSession(t.app, `192.0.2.${++n}`)

async function signUp(email: string, s = browser()) {
  await s.get('/signup')
  return s.post('/signup', { email, password: PASSWORD })
}

describe('verification', () => {
  it('mails a verification link over SMTP; opening it asks, confirming verifies, once', async () => {
    const arrived = smtp.next('new@example.com')
    const res = await signUp('new@example.com')
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe('/login?signed_up=1&email=new%40example.com')
    const mail = await arrived

    expect(mail.from?.text).toBe('"Team Auth" <auth@gatehouse.test>')
    expect(mail.subject).toBe('Verify your email address · Team Auth')
    expect(mail.text).toContain('created an account on Team Auth')
    expect(mail.html).toContain('<a href="http://gatehouse.test/verify-email?token=gev_')
    const links = mailLinks(mail)
    expect(links.every((l) => l.startsWith('http://gatehouse.test/'))).toBe(true)
    const link = mailLinkTo(mail, '/verify-email')!
    expect(link).toMatch(/^\/verify-email\?token=gev_[A-Za-z0-9_-]{43}$/)

    const user = () => t.db.selectFrom('users').selectAll().where('email', '=', 'new@example.com').executeTakeFirstOrThrow()
    expect((await user()).email_verified_at).toBeNull()

    // Logged in but unverified: no application can be registered yet.
    const s = browser()
    await s.logIn('new@example.com', PASSWORD)
    const list = await s.get('/applications')
    expect(list.body).toContain('Resend verification email')
    expect(list.body).not.toContain('href="/applications/new"')
    expect((await s.get('/applications/new')).statusCode).toBe(403)
    expect((await s.post('/applications', { name: 'x', redirect_uris: 'https://x.example/cb', scopes: 'read' })).statusCode).toBe(403)

    // Opening the link (as a mail scanner would) uses nothing up.
    const page = await s.get(link)
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('Verify my email address')
    expect((await user()).email_verified_at).toBeNull()

    const token = new URL(link, 'http://x').searchParams.get('token')!
    const done = await s.post('/verify-email', { token })
    expect(done.statusCode).toBe(303)
    expect(done.headers.location).toBe('/applications?verified=1')
    expect((await user()).email_verified_at).toEqual(t.clock())
    await createApplicationViaConsole(s)

    // Single use: the same link again is refused, by GET and by POST.
    expect((await s.get(link)).statusCode).toBe(400)
    const again = await s.post('/verify-email', { token })
    expect(again.statusCode).toBe(400)
    expect(again.body).toContain('expired or has already been used')
  })

  it('expires a verification link after 24 hours', async () => {
    const arrived = smtp.next('late@example.com')
    await signUp('late@example.com')
    const link = mailLinkTo(await arrived, '/verify-email')!
    t.clock.advance(24 * HOUR + 1000)
    const s = browser()
    await s.get('/login')
    expect((await s.get(link)).statusCode).toBe(400)
    const res = await s.post('/verify-email', { token: new URL(link, 'http://x').searchParams.get('token')! })
    expect(res.statusCode).toBe(400)
    const user = await t.db
      .selectFrom('users')
      .select('email_verified_at')
      .where('email', '=', 'late@example.com')
      .executeTakeFirstOrThrow()
    expect(user.email_verified_at).toBeNull()
  })

  it('answers sign-up the same for a registered address, which is told someone tried', async () => {
    await signUp('taken@example.com')
    await smtp.next('taken@example.com')
    const answers = []
    for (const email of ['taken@example.com', 'fresh@example.com']) {
      const s = browser()
      const arrived = smtp.next(email)
      const res = await signUp(email, s)
      answers.push({
        status: res.statusCode,
        location: String(res.headers.location).replace(encodeURIComponent(email), '<email>'),
        cookies: [...s.cookies.keys()].sort(),
        mail: await arrived,
      })
    }
    const [taken, fresh] = answers
    expect({ ...taken, mail: undefined }).toEqual({ ...fresh, mail: undefined })
    expect(taken!.mail.subject).toBe('Someone tried to sign up with your address · Team Auth')
    expect(mailLinks(taken!.mail)).toEqual([
      'http://gatehouse.test/login',
      'http://gatehouse.test/forgot-password',
      'http://gatehouse.test/',
    ])
    expect(fresh!.mail.subject).toBe('Verify your email address · Team Auth')
  })
})

describe('password reset', () => {
  beforeAll(async () => {
    const arrived = smtp.next('reset@example.com')
    await new BrowserSession(t.app, '198.51.100.1').signUpAndLogIn('reset@example.com', PASSWORD)
    await arrived
  })

  /** The page without what legitimately differs: the CSRF token and the address typed. */
  const normalised = (body: string, email: string) => body.replace(/name="_csrf" value="[^"]*"/g, '').replaceAll(email, '<email>')

  it('answers the same for a known and an unknown email; each gets a mail', async () => {
    const answers = []
    for (const email of ['reset@example.com', 'nobody@example.com']) {
      const s = browser()
      await s.get('/forgot-password')
      const arrived = smtp.next(email)
      const res = await s.post('/forgot-password', { email })
      answers.push({ status: res.statusCode, body: normalised(res.body, email), mail: await arrived })
    }
    expect(answers[0]!.status).toBe(200)
    expect(answers[0]!.body).toBe(answers[1]!.body)
    expect(answers[0]!.body).toContain('If an account uses')
    expect(mailLinkTo(answers[0]!.mail, '/reset-password')).toMatch(/^\/reset-password\?token=gpr_/)
    expect(answers[1]!.mail.subject).toBe('Password reset requested · Team Auth')
    expect(mailLinkTo(answers[1]!.mail, '/reset-password')).toBeUndefined()
  })

  async function resetLink(email = 'reset@example.com'): Promise<string> {
    const s = browser()
    await s.get('/forgot-password')
    const arrived = smtp.next(email)
    expect((await s.post('/forgot-password', { email })).statusCode).toBe(200)
    return mailLinkTo(await arrived, '/reset-password')!
  }
  const tokenOf = (link: string) => new URL(link, 'http://x').searchParams.get('token')!

  it('sets the new password once: every session ends, the old password and the link stop working, a notice is mailed', async () => {
    const holder = await browser().logIn('reset@example.com', PASSWORD)
    expect(holder.statusCode).toBe(303)
    const other = browser()
    await other.logIn('reset@example.com', PASSWORD)
    expect((await other.get('/applications')).statusCode).toBe(200)
    const older = await resetLink()
    const link = await resetLink()

    const s = browser()
    const page = await s.get(link)
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('value="reset@example.com"')
    // The rules apply before the link is used: a common password is refused, the link still works.
    const weak = await s.post('/reset-password', { token: tokenOf(link), password: 'password123' })
    expect(weak.statusCode).toBe(400)
    expect(weak.body).toContain('one of the most common passwords')

    const notice = smtp.next('reset@example.com')
    const done = await s.post('/reset-password', { token: tokenOf(link), password: 'a brand new passphrase' })
    expect(done.statusCode).toBe(303)
    expect(done.headers.location).toBe('/login?reset=1&email=reset%40example.com')
    expect((await notice).subject).toBe('Your password was changed · Team Auth')

    const row = await t.db
      .selectFrom('users')
      .select(['id', 'password_hash'])
      .where('email', '=', 'reset@example.com')
      .executeTakeFirstOrThrow()
    expect(await verifyPassword(row.password_hash, 'a brand new passphrase')).toBe(true)
    expect(await t.db.selectFrom('sessions').select('id_hash').where('user_id', '=', row.id).execute()).toEqual([])
    expect((await other.get('/applications')).statusCode).toBe(303)

    // The link, and any older one, cannot be used again.
    expect((await s.post('/reset-password', { token: tokenOf(link), password: 'yet another passphrase' })).statusCode).toBe(400)
    expect((await s.post('/reset-password', { token: tokenOf(older), password: 'yet another passphrase' })).statusCode).toBe(400)
    const loginOld = browser()
    await loginOld.get('/login')
    expect((await loginOld.post('/login', { email: 'reset@example.com', password: PASSWORD })).statusCode).toBe(401)
    await browser().logIn('reset@example.com', 'a brand new passphrase')
  })

  it('expires a reset link after one hour', async () => {
    t.clock.advance(2 * HOUR) // a fresh rate-limit window for this address
    const link = await resetLink()
    t.clock.advance(HOUR + 1000)
    const s = browser()
    await s.get('/login')
    expect((await s.get(link)).statusCode).toBe(400)
    expect((await s.post('/reset-password', { token: tokenOf(link), password: 'too late passphrase' })).statusCode).toBe(400)
  })

  it('limits reset requests per email typed, known or not, with the same 429', async () => {
    t.clock.advance(2 * HOUR)
    const answers = []
    for (const email of ['reset@example.com', 'ghost@example.com']) {
      for (let i = 0; i < 3; i++) {
        const s = browser()
        await s.get('/forgot-password')
        expect((await s.post('/forgot-password', { email })).statusCode).toBe(200)
      }
      const s = browser()
      await s.get('/forgot-password')
      const res = await s.post('/forgot-password', { email })
      answers.push({ status: res.statusCode, retry: res.headers['retry-after'], body: normalised(res.body, email) })
    }
    expect(answers[0]).toEqual(answers[1])
    expect(answers[0]!.status).toBe(429)
  })
})

describe('when mail cannot be sent', () => {
  let down: TestContext
  beforeAll(async () => {
    // Nothing listens on this port: every send fails, as with an SMTP server that is down.
    down = await buildTestApp({ SMTP_URL: `smtp://127.0.0.1:${await freePort()}`, LOG_LEVEL: 'info' }, t.testDb, {
      realMailer: true,
      logStream: new Writable({
        write(chunk, _encoding, done) {
          logLines.push(String(chunk))
          done()
        },
      }),
    })
  })
  afterAll(async () => {
    await down?.close()
  })

  it('keeps the sign-up, says the mail could not be sent, and the mail can be asked for again', async () => {
    const s = new BrowserSession(down.app, '203.0.113.9')
    await s.get('/signup')
    const res = await s.post('/signup', { email: 'unlucky@example.com', password: PASSWORD })
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe('/login?signed_up=1&email=unlucky%40example.com&mail=failed')
    expect((await s.get(String(res.headers.location))).body).toContain('We could not send the verification mail just now')
    expect(await t.db.selectFrom('users').select('id').where('email', '=', 'unlucky@example.com').executeTakeFirst()).toBeDefined()
    expect(logLines.join('')).toContain('"msg":"mail could not be sent"')

    const forgot = new BrowserSession(down.app, '203.0.113.10')
    await forgot.get('/forgot-password')
    const refused = await forgot.post('/forgot-password', { email: 'unlucky@example.com' })
    expect(refused.statusCode).toBe(503)
    expect(refused.body).toContain('We could not send the mail just now')

    // Once mail flows again (here: the other process, with a working SMTP server), the user asks again.
    const again = new BrowserSession(t.app, '203.0.113.11')
    await again.logIn('unlucky@example.com', PASSWORD)
    await again.get('/applications')
    const arrived = smtp.next('unlucky@example.com')
    const resend = await again.post('/account/verification-email', { from: 'applications' })
    expect(resend.headers.location).toBe('/applications?verification=sent')
    await again.verifyEmail(mailLinkTo(await arrived, '/verify-email')!)
  })
})

it('never logs a link, a token or the SMTP password', async () => {
  const log = logLines.join('')
  expect(log).toContain('"msg":"mail sent"')
  expect(log).not.toMatch(/gev_|gpr_|gce_/)
  expect(log).not.toContain(SMTP_PASSWORD)
  expect(log).not.toContain(encodeURIComponent(SMTP_PASSWORD))
  for (const line of logLines) expect(line).not.toContain(SESSION_COOKIE + '=')
})
