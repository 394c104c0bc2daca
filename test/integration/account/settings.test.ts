import { describe, expect, it } from 'vitest'
import { SESSION_COOKIE } from '../../../src/http/session.js'
import { sha256Hex } from '../../../src/lib/crypto.js'
import { verifyPassword } from '../../../src/lib/passwords.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { createApplicationViaConsole } from '../../helpers/console.js'
import { createAccessToken, createApplication, basicAuth } from '../../helpers/factories.js'
import { linkTo } from '../../helpers/mailbox.js'
import { testAppFile } from '../../helpers/file-set-up.js'

/*
 * The Account pages (docs/accounts.md "Your account"): change password, change email, active sessions,
 * delete account, and "Resend verification email". Mail goes to the test mailbox; the real
 * transports have their own tests (test/integration/mail/).
 */

const PASSWORD = 'correct horse battery'
const { t } = testAppFile({ VERIFICATION_EMAIL_LIMIT: '2' })

let n = 0
const browser = (ua = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0') => {
  const s = new BrowserSession(t.app, `192.0.2.${++n}`)
  const get = s.get.bind(s)
  const post = s.post.bind(s)
  s.get = (url, headers = {}) => get(url, { 'user-agent': ua, ...headers })
  s.post = (url, fields, headers = {}) => post(url, fields, { 'user-agent': ua, ...headers })
  return s
}
const userRow = (email: string) => t.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst()
const tokenOf = (link: string) => new URL(link, 'http://x').searchParams.get('token')!

describe('Account', () => {
  it('is in the user menu, needs a log-in, and shows the address and its state', async () => {
    const s = await browser().signUpAndLogIn('menu@example.com', PASSWORD, { verify: false })
    const apps = await s.get('/applications')
    expect(apps.body).toContain('<a href="/account">Account</a>')
    const page = await s.get('/account')
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('menu@example.com')
    expect(page.body).toContain('not verified')
    expect((await t.app.inject('/account')).headers.location).toBe('/login?next=%2Faccount')
    expect((await t.app.inject('/account/sessions')).headers.location).toBe('/login?next=%2Faccount%2Fsessions')
  })
})

describe('Resend verification email', () => {
  it('sends a new link, at most VERIFICATION_EMAIL_LIMIT an hour, and each link verifies', async () => {
    const s = await browser().signUpAndLogIn('resend@example.com', PASSWORD, { verify: false })
    await s.get('/applications')
    const first = await s.post('/account/verification-email', { from: 'applications' })
    expect(first.headers.location).toBe('/applications?verification=sent')
    expect((await s.get('/applications?verification=sent')).body).toContain('We sent a new verification link')
    await s.post('/account/verification-email', { from: 'account' })
    const limited = await s.post('/account/verification-email', { from: 'applications' })
    expect(limited.headers.location).toBe('/applications?verification=limited')
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0)
    // One at sign-up, two asked for: every one of them works until one is used.
    const mails = t.mailbox.to('resend@example.com')
    expect(mails).toHaveLength(3)
    await s.verifyEmail(linkTo(mails[0]!, '/verify-email')!)
    expect((await userRow('resend@example.com'))!.email_verified_at).not.toBeNull()
    expect((await s.post('/account/verification-email', {})).headers.location).toBe('/applications?verification=already-verified')
  })
})

describe('change password', () => {
  it('asks for the current password, applies the rules, ends the other sessions and tells the address', async () => {
    const s = await browser().signUpAndLogIn('pw@example.com', PASSWORD)
    const other = await browser().logIn('pw@example.com', PASSWORD)
    expect(other.statusCode).toBe(303)
    const otherSession = browser()
    await otherSession.logIn('pw@example.com', PASSWORD)

    await s.get('/account/password')
    const wrong = await s.post('/account/password', { current_password: 'not my password', new_password: 'a new passphrase' })
    expect(wrong.statusCode).toBe(400)
    expect(wrong.body).toContain('id="current_password-error">The current password is not right.')
    const common = await s.post('/account/password', { current_password: PASSWORD, new_password: 'iloveyou' })
    expect(common.statusCode).toBe(400)
    expect(common.body).toContain('one of the most common passwords')
    const short = await s.post('/account/password', { current_password: PASSWORD, new_password: 'short' })
    expect(short.body).toContain('Password must be at least 8 characters.')

    const done = await s.post('/account/password', { current_password: PASSWORD, new_password: 'a new passphrase' })
    expect(done.statusCode).toBe(303)
    expect(done.headers.location).toBe('/account?password_changed=1')
    expect((await s.get('/account?password_changed=1')).body).toContain('Your password was changed')
    expect((await otherSession.get('/applications')).statusCode).toBe(303)
    expect(await verifyPassword((await userRow('pw@example.com'))!.password_hash, 'a new passphrase')).toBe(true)
    expect(t.mailbox.last('pw@example.com').subject).toBe('Your password was changed · Gatehouse')
  })

  it('counts wrong current passwords like failed log-ins: 429 after LOGIN_FAILURE_LIMIT', async () => {
    const s = await browser().signUpAndLogIn('guess@example.com', PASSWORD)
    await s.get('/account/password')
    for (let i = 0; i < 10; i++) {
      expect((await s.post('/account/password', { current_password: `guess ${i}`, new_password: 'a new passphrase' })).statusCode).toBe(400)
    }
    const limited = await s.post('/account/password', { current_password: PASSWORD, new_password: 'a new passphrase' })
    expect(limited.statusCode).toBe(429)
    expect(limited.headers['retry-after']).toBeDefined()
  })
})

describe('change email', () => {
  it('changes the address only once the link mailed to the new one is confirmed, and tells the old one', async () => {
    const s = await browser().signUpAndLogIn('old@example.com', PASSWORD)
    await s.get('/account/email')
    const sent = await s.post('/account/email', { new_email: 'New@Example.com', current_password: PASSWORD })
    expect(sent.statusCode).toBe(200)
    expect(sent.body).toContain('We sent a link to <strong>new@example.com</strong>')
    expect(await userRow('old@example.com')).toBeDefined()
    const link = linkTo(t.mailbox.last('new@example.com'), '/confirm-email')!
    expect(link).toMatch(/^\/confirm-email\?token=gce_/)

    // Another account's browser cannot use it.
    const intruder = await browser().signUpAndLogIn('intruder@example.com', PASSWORD)
    const seen = await intruder.get(link)
    expect(seen.body).toContain('belongs to another account')
    const refused = await intruder.post('/confirm-email', { token: tokenOf(link) })
    expect(refused.statusCode).toBe(403)
    expect(await userRow('intruder@example.com')).toBeDefined()
    expect(await userRow('new@example.com')).toBeUndefined()

    const page = await s.get(link)
    expect(page.body).toContain('new@example.com')
    const done = await s.post('/confirm-email', { token: tokenOf(link) })
    expect(done.headers.location).toBe('/account?email_changed=1')
    const row = await userRow('new@example.com')
    expect(row?.email_verified_at).not.toBeNull()
    expect(await userRow('old@example.com')).toBeUndefined()
    expect(t.mailbox.last('old@example.com').subject).toBe('Your email address was changed · Gatehouse')
    expect(t.mailbox.last('old@example.com').text).toContain('to new@example.com')
    // Once only.
    expect((await s.post('/confirm-email', { token: tokenOf(link) })).statusCode).toBe(400)
    await browser().logIn('new@example.com', PASSWORD)
  })

  it('answers the same when the new address belongs to another account, which is told instead', async () => {
    const s = await browser().signUpAndLogIn('mover@example.com', PASSWORD)
    await browser().signUpAndLogIn('occupied@example.com', PASSWORD)
    await s.get('/account/email')
    const bodies = []
    for (const email of ['occupied@example.com', 'vacant@example.com']) {
      const res = await s.post('/account/email', { new_email: email, current_password: PASSWORD })
      bodies.push({ status: res.statusCode, body: res.body.replace(/name="_csrf" value="[^"]*"/g, '').replaceAll(email, '<email>') })
    }
    expect(bodies[0]).toEqual(bodies[1])
    expect(t.mailbox.last('occupied@example.com').subject).toBe('Someone tried to use your address · Gatehouse')
    expect(linkTo(t.mailbox.last('occupied@example.com'), '/confirm-email')).toBeUndefined()
  })

  it('refuses the link when another account took the address meanwhile, and keeps the old address', async () => {
    const s = await browser().signUpAndLogIn('slow@example.com', PASSWORD)
    await s.get('/account/email')
    await s.post('/account/email', { new_email: 'contested@example.com', current_password: PASSWORD })
    const link = linkTo(t.mailbox.last('contested@example.com'), '/confirm-email')!
    await browser().signUpAndLogIn('contested@example.com', PASSWORD)
    await s.get(link)
    const res = await s.post('/confirm-email', { token: tokenOf(link) })
    expect(res.statusCode).toBe(409)
    expect(await userRow('slow@example.com')).toBeDefined()
  })

  it('voids a verification link sent to the old address', async () => {
    const s = await browser().signUpAndLogIn('unverified-mover@example.com', PASSWORD, { verify: false })
    const verification = linkTo(t.mailbox.last('unverified-mover@example.com'), '/verify-email')!
    await s.get('/account/email')
    await s.post('/account/email', { new_email: 'moved-on@example.com', current_password: PASSWORD })
    await s.get(linkTo(t.mailbox.last('moved-on@example.com'), '/confirm-email')!)
    await s.post('/confirm-email', { token: tokenOf(linkTo(t.mailbox.last('moved-on@example.com'), '/confirm-email')!) })
    expect((await userRow('moved-on@example.com'))!.email_verified_at).not.toBeNull()
    // The old link now names an address the account left: it verifies nothing.
    await t.db.updateTable('users').set({ email_verified_at: null }).where('email', '=', 'moved-on@example.com').execute()
    await s.get(verification)
    expect((await s.post('/verify-email', { token: tokenOf(verification) })).statusCode).toBe(400)
    expect((await userRow('moved-on@example.com'))!.email_verified_at).toBeNull()
  })
})

describe('active sessions', () => {
  it('lists device, address and last seen; last seen is written at most every five minutes', async () => {
    const s = await browser().signUpAndLogIn('sessions@example.com', PASSWORD)
    const phone = browser(
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
    )
    await phone.logIn('sessions@example.com', PASSWORD)
    const page = await s.get('/account/sessions')
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('Firefox on Linux <strong>(this browser)</strong>')
    expect(page.body).toContain('Safari on iOS')
    expect(page.body).toContain(`<code>${phone.remoteAddress}</code>`)

    const user = (await userRow('sessions@example.com'))!
    const lastSeen = async () =>
      (
        await t.db
          .selectFrom('sessions')
          .select('last_seen_at')
          .where('id_hash', '=', sha256Hex(phone.cookies.get(SESSION_COOKIE)!))
          .executeTakeFirstOrThrow()
      ).last_seen_at
    const loggedInAt = await lastSeen()
    t.clock.advance(4 * 60_000)
    const writes = t.queries.count
    await phone.get('/authorized-applications')
    expect(await lastSeen()).toEqual(loggedInAt)
    const readsOnly = t.queries.count - writes
    t.clock.advance(2 * 60_000)
    const before = t.queries.count
    await phone.get('/authorized-applications')
    expect(await lastSeen()).toEqual(t.clock())
    // As many statements as the request before: the session lookup writes in the same statement.
    expect(t.queries.count - before).toBe(readsOnly)
    expect(user.id).toBeDefined()
  })

  it('"Log out of all other sessions" ends every session but this one', async () => {
    const s = await browser().signUpAndLogIn('others@example.com', PASSWORD)
    const a = browser()
    await a.logIn('others@example.com', PASSWORD)
    const b = browser()
    await b.logIn('others@example.com', PASSWORD)
    await s.get('/account/sessions')
    const res = await s.post('/account/sessions/others', {})
    expect(res.headers.location).toBe('/account?sessions_ended=1')
    expect((await a.get('/applications')).statusCode).toBe(303)
    expect((await b.get('/applications')).statusCode).toBe(303)
    expect((await s.get('/applications')).statusCode).toBe(200)
    const user = (await userRow('others@example.com'))!
    expect(await t.db.selectFrom('sessions').select('id_hash').where('user_id', '=', user.id).execute()).toHaveLength(1)
  })
})

describe('delete account', () => {
  it('asks for the password, deletes applications (tokens revoked), grants and tokens, logs out, and confirms by mail', async () => {
    const s = await browser().signUpAndLogIn('leaving@example.com', PASSWORD)
    const own = await createApplicationViaConsole(s, { name: 'Doomed' })
    const owner = (await userRow('leaving@example.com'))!
    // A token issued for the user's own application (to someone else), and one issued to the user by another application.
    const stranger = (
      await t.db
        .insertInto('users')
        .values({ email: 'stranger@example.com', password_hash: 'x', created_at: t.clock() })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id
    const ownToken = await createAccessToken(t.db, { userId: stranger, applicationId: own.id })
    const elsewhere = await createApplication(t.db, { name: 'Elsewhere', resourceServer: true })
    const userToken = await createAccessToken(t.db, { userId: owner.id, applicationId: elsewhere.id })
    await t.db
      .insertInto('grants')
      .values({ user_id: owner.id, application_id: elsewhere.id, scopes: ['read'], created_at: t.clock(), updated_at: t.clock() })
      .execute()
    const introspect = (token: string) =>
      t.app.inject({
        method: 'POST',
        url: '/oauth/introspect',
        headers: {
          authorization: basicAuth(elsewhere.clientId, elsewhere.clientSecret),
          'content-type': 'application/x-www-form-urlencoded',
        },
        payload: `token=${token}`,
      })
    // Both answered active, and so cached by this process.
    expect((await introspect(ownToken.token)).json().active).toBe(true)
    expect((await introspect(userToken.token)).json().active).toBe(true)
    const announced: string[] = []
    t.deps.bus.subscribe({
      apply: (notice, origin) => {
        if (origin === 'local' && notice.kind === 'tokens') announced.push(...notice.digests)
      },
      clear: () => {},
    })

    await s.get('/account/delete')
    const wrong = await s.post('/account/delete', { password: 'not it at all' })
    expect(wrong.statusCode).toBe(400)
    expect(await userRow('leaving@example.com')).toBeDefined()

    const done = await s.post('/account/delete', { password: PASSWORD })
    expect(done.statusCode).toBe(303)
    expect(done.headers.location).toBe('/?account_deleted=1')
    expect(s.cookies.has(SESSION_COOKIE)).toBe(false)
    expect((await s.get('/?account_deleted=1')).body).toContain('Your account was deleted')

    expect(await userRow('leaving@example.com')).toBeUndefined()
    expect(await t.db.selectFrom('applications').select('id').where('id', '=', own.id).executeTakeFirst()).toBeUndefined()
    expect(await t.db.selectFrom('grants').select('id').where('user_id', '=', owner.id).execute()).toEqual([])
    expect(await t.db.selectFrom('access_tokens').select('token_hash').where('user_id', '=', owner.id).execute()).toEqual([])
    expect(announced).toEqual(expect.arrayContaining([ownToken.digest, userToken.digest]))
    expect((await introspect(ownToken.token)).json()).toEqual({ active: false })
    expect((await introspect(userToken.token)).json()).toEqual({ active: false })
    expect(t.mailbox.last('leaving@example.com').subject).toBe('Your account was deleted · Gatehouse')
    const login = browser()
    await login.get('/login')
    expect((await login.post('/login', { email: 'leaving@example.com', password: PASSWORD })).statusCode).toBe(401)
  })
})

describe('every new form', () => {
  it('refuses a POST without the CSRF token, and one from another origin', async () => {
    const s = await browser().signUpAndLogIn('forms@example.com', PASSWORD)
    await s.get('/account')
    for (const path of [
      '/account/password',
      '/account/email',
      '/account/sessions/others',
      '/account/delete',
      '/account/verification-email',
      '/forgot-password',
      '/reset-password',
      '/verify-email',
      '/confirm-email',
    ]) {
      expect((await s.post(path, { _csrf: null })).statusCode, path).toBe(403)
      expect((await s.post(path, {}, { origin: 'https://evil.example' })).statusCode, path).toBe(403)
      expect((await s.post(path, {}, { 'sec-fetch-site': 'cross-site' })).statusCode, path).toBe(403)
    }
    expect(await userRow('forms@example.com')).toBeDefined()
  })
})

describe('a suspended account', () => {
  // docs/operating/admin.md "Suspension": no account changes for a suspended user, by link either.
  it('cannot confirm an email change or reset its password with a link mailed before the suspension', async () => {
    const s = await browser().signUpAndLogIn('to-be-suspended@example.com', PASSWORD)
    await s.get('/account/email')
    expect((await s.post('/account/email', { new_email: 'elsewhere@example.com', current_password: PASSWORD })).statusCode).toBe(200)
    const change = linkTo(t.mailbox.last('elsewhere@example.com'), '/confirm-email')!
    const anonymous = browser()
    await anonymous.get('/forgot-password')
    expect((await anonymous.post('/forgot-password', { email: 'to-be-suspended@example.com' })).statusCode).toBe(200)
    const reset = linkTo(t.mailbox.last('to-be-suspended@example.com'), '/reset-password')!
    const before = await userRow('to-be-suspended@example.com')
    await t.db.updateTable('users').set({ suspended_at: t.clock() }).where('id', '=', before!.id).execute()

    // Only the requester's session may confirm (docs/accounts.md "Your account"), and a suspended account has none.
    expect((await s.get('/account')).statusCode).toBe(303)
    await anonymous.get(change)
    const confirmed = await anonymous.post('/confirm-email', { token: tokenOf(change) })
    expect(confirmed.statusCode).toBe(303)
    expect(confirmed.headers.location).toMatch(/^\/login\?next=/)
    await anonymous.get(reset)
    const chosen = await anonymous.post('/reset-password', { token: tokenOf(reset), password: 'a brand new passphrase' })
    expect(chosen.statusCode).toBe(403)
    expect(chosen.body).toContain('This account is suspended by the operator, so its password cannot be changed.')

    const after = await userRow('to-be-suspended@example.com')
    expect(after).toMatchObject({ email: 'to-be-suspended@example.com', password_hash: before!.password_hash })
    expect(await userRow('elsewhere@example.com')).toBeUndefined()
  })
})
