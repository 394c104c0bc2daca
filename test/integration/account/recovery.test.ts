import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { suspendUser } from '../../../src/operator/moderation.js'
import { buildTestApp, type TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { linkTo } from '../../helpers/mailbox.js'
import { operator } from '../operator/helpers.js'

/*
 * Every recovery closes the other doors (issue 23, README "Account recovery",
 * docs/decisions/010-account-recovery.md): a password reset or change, "Log out of all other
 * sessions" and an operator's suspension void every pending mailed link of the account and
 * every device cookie issued before.
 */

const PASSWORD = 'correct horse battery'
const NEW_PASSWORD = 'a brand new passphrase'
const DEVICE = 'gatehouse_device'
let t: TestContext
beforeAll(async () => {
  t = await buildTestApp({ LOGIN_ACCOUNT_ATTACK_LIMIT: '5' })
})
afterAll(async () => {
  await t.close()
})

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
