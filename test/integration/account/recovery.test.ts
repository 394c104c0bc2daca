import { describe, expect, it } from 'vitest'
import { suspendUser } from '../../../src/operator/moderation.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { createAccessToken, createApplication, holdConsentRequest } from '../../helpers/factories.js'
import { linkTo } from '../../helpers/mailbox.js'
import { isActive, operator } from '../operator/helpers.js'
import { testAppFile } from '../../helpers/file-set-up.js'

/*
 * Every recovery closes the other doors (docs/accounts.md "Account recovery",
 * docs/decisions/010-account-recovery.md): a password reset or change, "Log out of all other
 * sessions" and an operator's suspension void every pending mailed link of the account and
 * every device cookie issued before. A change of address is told to the old address at once,
 * with a link that cancels it. The first proof of an address the account never proved evicts
 * whoever opened the account ("pre-hijacking").
 */

const PASSWORD = 'correct horse battery'
const NEW_PASSWORD = 'a brand new passphrase'
const DEVICE = 'gatehouse_device'
const { t } = testAppFile({ LOGIN_ACCOUNT_ATTACK_LIMIT: '5' })

let n = 0
const browser = () => new BrowserSession(t.app, `198.51.100.${++n}`)
const tokenOf = (link: string) => new URL(link, 'http://x').searchParams.get('token')!
const userRow = (email: string) => t.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst()

/** The owner's browser, and an intruder's who learned the password and asked to move the account to their own address. */
async function intrudedAccount(owner: string, intruderAddress: string) {
  const ownerBrowser = await browser().signUpAndLogIn(owner, PASSWORD)
  const intruder = await browser()
    .logIn(owner, PASSWORD)
    .then(() => undefined)
  void intruder
  const intruderBrowser = browser()
  await intruderBrowser.logIn(owner, PASSWORD)
  await intruderBrowser.get('/account/email')
  const asked = await intruderBrowser.post('/account/email', { new_email: intruderAddress, current_password: PASSWORD })
  expect(asked.statusCode).toBe(200)
  const changeLink = linkTo(t.mailbox.last(intruderAddress), '/confirm-email')!
  expect(changeLink).toBeDefined()
  return { ownerBrowser, changeLink }
}

/** The intruder, logged out by now, opens the waiting link: it must not move the account. */
async function expectChangeLinkDead(changeLink: string, owner: string, intruderAddress: string) {
  const later = browser()
  t.clock.advance(3600_000)
  expect((await later.get(changeLink)).statusCode).toBe(400)
  await later.get('/login')
  expect((await later.post('/confirm-email', { token: tokenOf(changeLink) })).statusCode).toBe(400)
  expect(await userRow(owner)).toBeDefined()
  expect(await userRow(intruderAddress)).toBeUndefined()
}

async function resetByMail(email: string, password = NEW_PASSWORD, fields: Record<string, string> = { revoke_access: '1' }) {
  const s = browser()
  await s.get('/forgot-password')
  expect((await s.post('/forgot-password', { email })).statusCode).toBe(200)
  const link = linkTo(t.mailbox.last(email), '/reset-password')!
  await s.get(link)
  const done = await s.post('/reset-password', { token: tokenOf(link), password, ...fields })
  expect(done.statusCode).toBe(303)
  return s
}

describe('a pending email-change link', () => {
  it('is void after a password reset', async () => {
    const { changeLink } = await intrudedAccount('reset-owner@example.com', 'thief-1@example.com')
    await resetByMail('reset-owner@example.com')
    await expectChangeLinkDead(changeLink, 'reset-owner@example.com', 'thief-1@example.com')
  })

  it('is void after a password change', async () => {
    const { ownerBrowser, changeLink } = await intrudedAccount('change-owner@example.com', 'thief-2@example.com')
    await ownerBrowser.get('/account/password')
    const changed = await ownerBrowser.post('/account/password', { current_password: PASSWORD, new_password: NEW_PASSWORD })
    expect(changed.headers.location).toBe('/account?password_changed=1')
    await expectChangeLinkDead(changeLink, 'change-owner@example.com', 'thief-2@example.com')
  })

  it('is void after "Log out of all other sessions"', async () => {
    const { ownerBrowser, changeLink } = await intrudedAccount('sessions-owner@example.com', 'thief-3@example.com')
    await ownerBrowser.get('/account/sessions')
    expect((await ownerBrowser.post('/account/sessions/others', {})).headers.location).toBe('/account?sessions_ended=1')
    await expectChangeLinkDead(changeLink, 'sessions-owner@example.com', 'thief-3@example.com')
  })

  it("is void after an operator's suspension, and so is a verification link", async () => {
    const { changeLink } = await intrudedAccount('suspended-owner@example.com', 'thief-4@example.com')
    await browser().signUpAndLogIn('suspended-unverified@example.com', PASSWORD, { verify: false })
    const verification = linkTo(t.mailbox.last('suspended-unverified@example.com'), '/verify-email')!
    for (const email of ['suspended-owner@example.com', 'suspended-unverified@example.com']) {
      expect(await suspendUser(operator(t), (await userRow(email))!.id, t.clock())).toEqual({ changed: true })
    }
    await expectChangeLinkDead(changeLink, 'suspended-owner@example.com', 'thief-4@example.com')
    expect((await browser().get(verification)).statusCode).toBe(400)
  })
})

describe('a verification link', () => {
  it('is void after a password change', async () => {
    const s = await browser().signUpAndLogIn('verify-later@example.com', PASSWORD, { verify: false })
    const verification = linkTo(t.mailbox.last('verify-later@example.com'), '/verify-email')!
    await s.get('/account/password')
    await s.post('/account/password', { current_password: PASSWORD, new_password: NEW_PASSWORD })
    expect((await s.get(verification)).statusCode).toBe(400)
    expect((await userRow('verify-later@example.com'))!.email_verified_at).toBeNull()
  })
})

describe('a device cookie issued before a recovery', () => {
  /** Fills the account-under-attack limit (5 here) with failures from addresses that hold no device cookie. */
  async function attack(email: string) {
    for (let i = 0; i < 5; i++) {
      const stranger = browser()
      await stranger.get('/login')
      expect((await stranger.post('/login', { email, password: `guess ${i}` })).statusCode).toBe(401)
    }
  }
  async function logInAgain(s: BrowserSession, email: string, password: string) {
    s.cookies.delete('gatehouse_session')
    await s.get('/login')
    return s.post('/login', { email, password })
  }

  it('skips the account-under-attack limit while no recovery happened (the baseline)', async () => {
    const s = await browser().signUpAndLogIn('baseline@example.com', PASSWORD)
    expect(s.cookies.get(DEVICE)).toBeDefined()
    await attack('baseline@example.com')
    expect((await logInAgain(browser(), 'baseline@example.com', PASSWORD)).statusCode).toBe(429)
    expect((await logInAgain(s, 'baseline@example.com', PASSWORD)).statusCode).toBe(303)
  })

  it('no longer skips it after a password reset', async () => {
    // The device cookie an intruder collected by logging in with the stolen password.
    const intruder = await browser().signUpAndLogIn('cookie-reset@example.com', PASSWORD)
    const stale = intruder.cookies.get(DEVICE)!
    const owner = await resetByMail('cookie-reset@example.com')
    await owner.logIn('cookie-reset@example.com', NEW_PASSWORD)
    const fresh = owner.cookies.get(DEVICE)!
    expect(fresh).not.toBe(stale)
    await attack('cookie-reset@example.com')
    // Even with the new password, the old cookie is a stranger's: refused as under attack.
    const refused = await logInAgain(intruder, 'cookie-reset@example.com', NEW_PASSWORD)
    expect(refused.statusCode).toBe(429)
    // The cookie issued after the reset still lets its owner in.
    expect((await logInAgain(owner, 'cookie-reset@example.com', NEW_PASSWORD)).statusCode).toBe(303)
  })

  it('no longer skips it after a password change or "Log out of all other sessions"', async () => {
    for (const [email, recover] of [
      [
        'cookie-change@example.com',
        async (s: BrowserSession) => {
          await s.get('/account/password')
          await s.post('/account/password', { current_password: PASSWORD, new_password: NEW_PASSWORD })
        },
      ],
      [
        'cookie-others@example.com',
        async (s: BrowserSession) => {
          await s.get('/account/sessions')
          await s.post('/account/sessions/others', {})
        },
      ],
    ] as const) {
      const intruder = await browser().signUpAndLogIn(email, PASSWORD)
      const owner = browser()
      await owner.logIn(email, PASSWORD)
      await recover(owner)
      const password = email === 'cookie-change@example.com' ? NEW_PASSWORD : PASSWORD
      await attack(email)
      expect((await logInAgain(intruder, email, password)).statusCode, email).toBe(429)
    }
  })
})

describe('an email-change request', () => {
  it('tells the old address at once, with a link that cancels it; the change link is then refused', async () => {
    const { ownerBrowser, changeLink } = await intrudedAccount('cancel-owner@example.com', 'thief-5@example.com')
    const notice = t.mailbox.last('cancel-owner@example.com')
    expect(notice.subject).toBe('Someone asked to change your email address · Gatehouse')
    expect(notice.text).toContain('to thief-5@example.com')
    const cancelLink = linkTo(notice, '/cancel-email-change')!
    expect(cancelLink).toMatch(/^\/cancel-email-change\?token=gcc_/)

    // Opening the link (as a mail scanner would) changes nothing: the change link still works.
    const owner = browser()
    const page = await owner.get(cancelLink)
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('<button type="submit">Cancel the change</button>')
    expect((await browser().get(changeLink)).statusCode).toBe(200)
    // A forged form from elsewhere, or one without the form token, is refused.
    expect((await owner.post('/cancel-email-change', { token: tokenOf(cancelLink) }, { origin: 'https://evil.example' })).statusCode).toBe(
      403,
    )
    expect((await owner.post('/cancel-email-change', { token: tokenOf(cancelLink), _csrf: null })).statusCode).toBe(403)

    const cancelled = await owner.post('/cancel-email-change', { token: tokenOf(cancelLink) })
    expect(cancelled.statusCode).toBe(200)
    expect(cancelled.body).toContain('Change of address cancelled')
    await expectChangeLinkDead(changeLink, 'cancel-owner@example.com', 'thief-5@example.com')
    // Once only.
    expect((await owner.post('/cancel-email-change', { token: tokenOf(cancelLink) })).statusCode).toBe(400)

    const user = (await userRow('cancel-owner@example.com'))!
    const events = await t.db.selectFrom('audit_events').select('event').where('user_id', '=', user.id).execute()
    expect(events.map((e) => e.event)).toContain('user.email_change_cancelled')
    // The owner's own session was never needed, and is untouched.
    expect((await ownerBrowser.get('/account')).statusCode).toBe(200)
  })

  it('is not cancelled by a cancel link once the change is confirmed', async () => {
    const s = await browser().signUpAndLogIn('mover-on@example.com', PASSWORD)
    await s.get('/account/email')
    await s.post('/account/email', { new_email: 'moved-on-2@example.com', current_password: PASSWORD })
    const cancelLink = linkTo(t.mailbox.last('mover-on@example.com'), '/cancel-email-change')!
    const changeLink = linkTo(t.mailbox.last('moved-on-2@example.com'), '/confirm-email')!
    await s.get(changeLink)
    expect((await s.post('/confirm-email', { token: tokenOf(changeLink) })).headers.location).toBe('/account?email_changed=1')
    expect((await browser().get(cancelLink)).statusCode).toBe(400)
    expect(await userRow('moved-on-2@example.com')).toBeDefined()
  })
})

/** What an account did before its address was proven: a grant and a token for an application, and an open consent request. */
async function holdings(email: string) {
  const userId = (await userRow(email))!.id
  const api = await createApplication(t.db, { name: 'Resource API', resourceServer: true })
  const app = await createApplication(t.db, { name: 'Granted app' })
  await t.db
    .insertInto('grants')
    .values({ user_id: userId, application_id: app.id, scopes: ['read'], created_at: t.clock(), updated_at: t.clock() })
    .execute()
  const token = await createAccessToken(t.db, { userId, applicationId: app.id })
  await holdConsentRequest(t.db, { userId, applicationId: app.id, now: t.clock() })
  // Answered active, so cached: the revocation must reach the cache too.
  expect(await isActive(t, api, token.token)).toBe(true)
  const count = async (table: 'grants' | 'pending_authorizations') =>
    (await t.db.selectFrom(table).select('id').where('user_id', '=', userId).execute()).length
  return {
    userId,
    tokenActive: () => isActive(t, api, token.token),
    grants: () => count('grants'),
    pending: () => count('pending_authorizations'),
  }
}

describe('the first proof of an address', () => {
  it('by a verification link evicts whoever opened the account: grants, tokens, consent requests, sessions, device cookies', async () => {
    // Someone opens an account with the owner's address, logs in and gives an application access.
    const squatter = await browser().signUpAndLogIn('pre-hijacked@example.com', PASSWORD, { verify: false })
    const squatterCookie = squatter.cookies.get(DEVICE)!
    const held = await holdings('pre-hijacked@example.com')
    const versionBefore = (await userRow('pre-hijacked@example.com'))!.credential_version

    // The owner of the address opens the verification link mailed to it.
    const owner = browser()
    // Without that account's session, the page asks for a new password (docs/accounts.md "Account recovery").
    await owner.verifyEmail(linkTo(t.mailbox.last('pre-hijacked@example.com'), '/verify-email')!, NEW_PASSWORD)

    expect(await held.tokenActive()).toBe(false)
    expect(await held.grants()).toBe(0)
    expect(await held.pending()).toBe(0)
    expect((await squatter.get('/applications')).statusCode).toBe(303)
    expect((await userRow('pre-hijacked@example.com'))!.credential_version).toBeGreaterThan(versionBefore)
    expect(squatterCookie).toBeDefined()
    const events = await t.db.selectFrom('audit_events').select(['event', 'detail']).where('user_id', '=', held.userId).execute()
    expect(events.find((e) => e.event === 'user.email_verified')?.detail).toContain('First proof of the address')
  })

  it('by a verification link keeps the session of the browser that proves it, and a later proof revokes nothing', async () => {
    const s = await browser().signUpAndLogIn('own-browser@example.com', PASSWORD, { verify: false })
    const verification = linkTo(t.mailbox.last('own-browser@example.com'), '/verify-email')!
    await s.get('/applications')
    expect((await s.verifyEmail(verification)).headers.location).toBe('/applications?verified=1')
    expect((await s.get('/applications')).statusCode).toBe(200)
    // Verified now: a password reset with the box unchecked leaves the applications their access.
    const held = await holdings('own-browser@example.com')
    await resetByMail('own-browser@example.com', NEW_PASSWORD, {})
    expect(await held.tokenActive()).toBe(true)
    expect(await held.grants()).toBe(1)
  })

  it('by a reset link revokes everything, even with "Also revoke every application\'s access" unchecked', async () => {
    await browser().signUpAndLogIn('reset-claimed@example.com', PASSWORD, { verify: false })
    const held = await holdings('reset-claimed@example.com')
    await resetByMail('reset-claimed@example.com', NEW_PASSWORD, {})
    expect(await held.tokenActive()).toBe(false)
    expect(await held.grants()).toBe(0)
    expect(await held.pending()).toBe(0)
    expect((await userRow('reset-claimed@example.com'))!.email_verified_at).not.toBeNull()
  })
})

describe('"Also revoke every application\'s access" on the reset page', () => {
  it('is offered checked, and revokes every grant and token of a verified account', async () => {
    await browser().signUpAndLogIn('revoke-all@example.com', PASSWORD)
    const held = await holdings('revoke-all@example.com')
    const s = browser()
    await s.get('/forgot-password')
    await s.post('/forgot-password', { email: 'revoke-all@example.com' })
    const page = await s.get(linkTo(t.mailbox.last('revoke-all@example.com'), '/reset-password')!)
    expect(page.body).toMatch(/<input type="checkbox" id="revoke_access" name="revoke_access" value="1" checked/)
    expect(page.body).toContain("Also revoke every application's access")
    await resetByMail('revoke-all@example.com')
    expect(await held.tokenActive()).toBe(false)
    expect(await held.grants()).toBe(0)
    expect(await held.pending()).toBe(0)
  })
})
