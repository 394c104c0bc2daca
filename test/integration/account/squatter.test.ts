import { describe, expect, it } from 'vitest'
import { TEST_ISSUER } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { linkTo } from '../../helpers/mailbox.js'
import { type SoftCredential, authenticationResponse, newCredential, registrationResponse } from '../../helpers/soft-authenticator.js'
import { STEP_MS, enrolTotp, totpCode } from '../../helpers/totp.js'
import { testAppFile } from '../../helpers/file-set-up.js'

/*
 * Identity that holds (docs/accounts.md "Account recovery", "Two-factor authentication",
 * docs/decisions/010-account-recovery.md, 011-second-factor.md). Someone opens an account with
 * another person's address, which sign-up allows before the address is proven, and sets up a
 * password, factors and a profile. The owner's first proof of the address (the verification link
 * opened without that account's session, or a reset) leaves nothing of it that opens the account.
 * No factor can be added before the address is verified; adding one asks for the password on the
 * same form and closes the other doors. An email-change link is confirmed by the requester only.
 */

const PASSWORD = 'correct horse battery'
const OWNER_PASSWORD = 'the real owner chose this'
const ORIGIN = TEST_ISSUER
const { t } = testAppFile()

let n = 0
const browser = () => new BrowserSession(t.app, `198.51.100.${++n}`)
const tokenOf = (link: string) => new URL(link, 'http://x').searchParams.get('token')!
const userRow = (email: string) => t.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirstOrThrow()
const verificationLink = (email: string) =>
  t.mailbox
    .to(email)
    .map((m) => linkTo(m, '/verify-email'))
    .find((l) => l !== undefined)!

async function addPasskey(s: BrowserSession, proof: { password?: string; code?: string } = { password: PASSWORD }) {
  const credential = newCredential()
  await s.get('/account/passkeys')
  const start = await s.postJson('/account/passkeys/registration-options', {})
  expect(start.statusCode, start.body).toBe(200)
  const response = registrationResponse(credential, start.json().options, ORIGIN)
  const res = await s.postJson('/account/passkeys/registration', { name: 'Key', ...proof, response })
  return { res, credential }
}

async function passkeySignIn(credential: SoftCredential) {
  const s = browser()
  await s.get('/login')
  const start = await s.postJson('/login/passkey/options', {})
  return s.postJson('/login/passkey', { next: '', response: authenticationResponse(credential, start.json().options, ORIGIN) })
}

async function logInStatus(email: string, password: string) {
  const s = browser()
  await s.get('/login')
  return s.post('/login', { email, password })
}

/**
 * A squatter's account as one made before "no factor before verification" could be: signed up
 * with the owner's address, logged in, an authenticator app and a passkey added (the address
 * briefly marked verified for that, then unproven again), a display name, a device cookie of a
 * finished log-in, a log-in waiting for its second factor and a WebAuthn challenge.
 */
async function squattedAccount(email: string) {
  const squatter = await browser().signUpAndLogIn(email, PASSWORD, { verify: false })
  const verified = (at: Date | null) => t.db.updateTable('users').set({ email_verified_at: at }).where('email', '=', email).execute()
  await verified(t.clock())
  const { secret, recoveryCodes } = await enrolTotp(squatter, t.clock)
  t.clock.advance(STEP_MS)
  const { res, credential } = await addPasskey(squatter)
  expect(res.statusCode, res.body).toBe(200)
  await squatter.get('/account')
  expect((await squatter.post('/account/profile', { display_name: 'Squatter' })).statusCode).toBe(303)
  // A WebAuthn challenge handed out and never used.
  await squatter.get('/account/passkeys')
  expect((await squatter.postJson('/account/passkeys/registration-options', {})).statusCode).toBe(200)
  await verified(null)
  // A fresh log-in with the password and the app: its device cookie is of the current version.
  const again = browser()
  expect((await again.logIn(email, PASSWORD)).headers.location).toBe('/login/second-factor')
  await again.get('/login/second-factor')
  expect((await again.post('/login/second-factor', { code: totpCode(secret, t.clock()) })).statusCode).toBe(303)
  t.clock.advance(STEP_MS)
  // A password step left waiting for its second factor.
  expect((await browser().logIn(email, PASSWORD)).headers.location).toBe('/login/second-factor')
  const user = await userRow(email)
  expect(user).toMatchObject({ second_factor: true, display_name: 'Squatter', email_verified_at: null })
  return { squatter, again, secret, recoveryCodes, credential, userId: user.id, version: user.credential_version }
}

/** Nothing the squatter set up opens the account, and the owner logs in with the new password and no second step. */
async function expectEvicted(email: string, held: Awaited<ReturnType<typeof squattedAccount>>) {
  for (const s of [held.squatter, held.again]) expect((await s.get('/applications')).statusCode).toBe(303)
  expect((await logInStatus(email, PASSWORD)).statusCode).toBe(401)
  expect((await passkeySignIn(held.credential)).statusCode).toBe(400)
  for (const table of ['totp_secrets', 'totp_enrolments', 'recovery_codes', 'passkeys', 'webauthn_challenges', 'pending_logins'] as const) {
    const rows = await t.db.selectFrom(table).select('user_id').where('user_id', '=', held.userId).execute()
    expect(rows, table).toHaveLength(0)
  }
  const user = await userRow(email)
  expect(user).toMatchObject({ second_factor: false, display_name: null })
  expect(user.email_verified_at).not.toBeNull()
  // Device cookies are signed over the credential version: the squatter's no longer count.
  expect(user.credential_version).toBeGreaterThan(held.version)
  const owner = await logInStatus(email, OWNER_PASSWORD)
  expect(owner.statusCode).toBe(303)
  expect(owner.headers.location).toBe('/applications')
}

describe("the owner's first proof of the address", () => {
  it("by the verification link, opened without the account's session, asks for a new password and leaves the squatter nothing", async () => {
    const email = 'squatted-verify@example.com'
    const held = await squattedAccount(email)
    const owner = browser()
    const link = verificationLink(email)
    const page = await owner.get(link)
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('name="password"')
    // Without a password nothing changes, and the link stays usable.
    expect((await owner.post('/verify-email', { token: tokenOf(link) })).statusCode).toBe(400)
    expect((await userRow(email)).email_verified_at).toBeNull()
    const weak = await owner.post('/verify-email', { token: tokenOf(link), password: 'short' })
    expect(weak.statusCode).toBe(400)
    const done = await owner.post('/verify-email', { token: tokenOf(link), password: OWNER_PASSWORD })
    expect(done.statusCode).toBe(303)
    expect(done.headers.location).toBe('/login?verified=1')
    await expectEvicted(email, held)
  })

  it('by a reset link removes the factors and profile too', async () => {
    const email = 'squatted-reset@example.com'
    const held = await squattedAccount(email)
    const owner = browser()
    await owner.get('/forgot-password')
    await owner.post('/forgot-password', { email })
    const link = linkTo(t.mailbox.last(email), '/reset-password')!
    await owner.get(link)
    expect((await owner.post('/reset-password', { token: tokenOf(link), password: OWNER_PASSWORD })).statusCode).toBe(303)
    await expectEvicted(email, held)
  })

  it("by the verification link in a browser holding the account's own session keeps its password and session", async () => {
    const email = 'own-proof@example.com'
    const s = await browser().signUpAndLogIn(email, PASSWORD, { verify: false })
    const link = verificationLink(email)
    const page = await s.get(link)
    expect(page.body).not.toContain('name="password"')
    expect((await s.post('/verify-email', { token: tokenOf(link) })).headers.location).toBe('/applications?verified=1')
    expect((await s.get('/applications')).statusCode).toBe(200)
    expect((await logInStatus(email, PASSWORD)).statusCode).toBe(303)
  })
})

describe('adding a factor', () => {
  it('is refused before the address is verified, with a clear page and JSON, offering to resend the mail', async () => {
    const s = await browser().signUpAndLogIn('unproven@example.com', PASSWORD, { verify: false })
    const page = await s.get('/account/two-factor')
    expect(page.body).toContain('Verify your email address before you add a second factor')
    expect(page.body).toContain('<input type="hidden" name="from" value="two-factor">')
    const started = await s.post('/account/two-factor/totp', {})
    expect(started.statusCode).toBe(403)
    expect(started.body).toContain('Verify your email address before you add a second factor')
    const passkeys = await s.get('/account/passkeys')
    expect(passkeys.body).toContain('Resend verification email')
    expect(passkeys.body).not.toContain('data-passkey="register"')
    const options = await s.postJson('/account/passkeys/registration-options', {})
    expect(options.statusCode).toBe(403)
    expect(options.json().error).toMatch(/Verify your email address before you add a passkey/)
    const resent = await s.post('/account/verification-email', { from: 'two-factor' })
    expect(resent.headers.location).toBe('/account/two-factor?verification=sent')
    const user = await userRow('unproven@example.com')
    const rows = await t.db.selectFrom('totp_enrolments').select('user_id').where('user_id', '=', user.id).execute()
    expect(rows).toHaveLength(0)
  })

  it('needs the password typed on the same form, not just a recent log-in; wrong ones count as failures', async () => {
    const s = await browser().signUpAndLogIn('proof@example.com', PASSWORD)
    await s.get('/account/two-factor')
    await s.post('/account/two-factor/totp', {})
    const setup = await s.get('/account/two-factor/totp')
    expect(setup.body).toContain('name="password"')
    const secret = /<code class="secret">([A-Z2-7 ]+)<\/code>/.exec(setup.body)![1]!.replace(/ /g, '')
    const missing = await s.post('/account/two-factor/totp/confirm', { code: totpCode(secret, t.clock()) })
    expect(missing.statusCode).toBe(400)
    expect(missing.body).toContain('The password is not right')
    const wrong = await s.post('/account/two-factor/totp/confirm', { code: totpCode(secret, t.clock()), password: 'not the password' })
    expect(wrong.statusCode).toBe(400)
    const user = await userRow('proof@example.com')
    const counted = await t.db.selectFrom('rate_limits').select('key').where('key', 'like', `%${user.id}%`).execute()
    expect(counted.length).toBeGreaterThan(0)
    expect((await userRow('proof@example.com')).second_factor).toBe(false)

    const { res } = await addPasskey(s, {})
    expect(res.statusCode).toBe(400)
    expect(res.json().error).toMatch(/password is not right/)
    expect((await userRow('proof@example.com')).second_factor).toBe(false)
    const ok = await s.post('/account/two-factor/totp/confirm', { code: totpCode(secret, t.clock()), password: PASSWORD })
    expect(ok.statusCode).toBe(200)
    t.clock.advance(STEP_MS)
    // With an authenticator app, a current code of it may stand for the password.
    const withCode = await addPasskey(s, { code: totpCode(secret, t.clock()) })
    expect(withCode.res.statusCode, withCode.res.body).toBe(200)
  })
})

describe('a factor added', () => {
  /** Two logged-in browsers of one account; `enrol` adds a factor in the first. */
  async function closesOtherDoors(email: string, enrol: (s: BrowserSession) => Promise<void>) {
    const s = await browser().signUpAndLogIn(email, PASSWORD)
    const other = await browser().signUpAndLogIn(email, PASSWORD)
    expect((await other.get('/applications')).statusCode).toBe(200)
    const before = (await userRow(email)).credential_version
    await enrol(s)
    expect((await userRow(email)).credential_version, email).toBeGreaterThan(before)
    expect((await other.get('/applications')).statusCode, email).toBe(303)
    expect((await s.get('/applications')).statusCode, email).toBe(200)
  }

  it('(an authenticator app, a passkey, new recovery codes) voids earlier device cookies and ends the other sessions', async () => {
    let secret = ''
    await closesOtherDoors('enrol-totp@example.com', async (s) => {
      secret = (await enrolTotp(s, t.clock)).secret
      t.clock.advance(STEP_MS)
    })
    await closesOtherDoors('enrol-passkey@example.com', async (s) => {
      expect((await addPasskey(s)).res.statusCode).toBe(200)
    })
    const email = 'enrol-codes@example.com'
    const s = await browser().signUpAndLogIn(email, PASSWORD)
    secret = (await enrolTotp(s, t.clock)).secret
    t.clock.advance(STEP_MS)
    const other = browser()
    await other.logIn(email, PASSWORD)
    await other.get('/login/second-factor')
    expect((await other.post('/login/second-factor', { code: totpCode(secret, t.clock()) })).statusCode).toBe(303)
    t.clock.advance(STEP_MS)
    const before = (await userRow(email)).credential_version
    await s.get('/account/two-factor')
    const codes = await s.post('/account/two-factor/recovery-codes', { password: PASSWORD, code: totpCode(secret, t.clock()) })
    expect(codes.statusCode).toBe(200)
    expect((await userRow(email)).credential_version).toBeGreaterThan(before)
    expect((await other.get('/applications')).statusCode).toBe(303)
    expect((await s.get('/applications')).statusCode).toBe(200)
  })
})

describe('an email-change link', () => {
  async function requested(email: string, newEmail: string) {
    const s = await browser().signUpAndLogIn(email, PASSWORD)
    await s.get('/account/email')
    await s.post('/account/email', { new_email: newEmail, current_password: PASSWORD })
    return { s, link: linkTo(t.mailbox.last(newEmail), '/confirm-email')! }
  }

  it('is confirmed only in the session of the account that asked; without one, log in first and come back', async () => {
    const { link } = await requested('requester@example.com', 'requested@example.com')
    const holder = browser()
    const page = await holder.get(link)
    expect(page.statusCode).toBe(200)
    // Whoever holds the new mailbox learns nothing of the account until they log in to it.
    expect(page.body).toContain('<strong>requested@example.com</strong>')
    expect(page.body).not.toContain('requester@example.com')
    expect(page.body).not.toContain('action="/confirm-email"')
    // A form posted anyway (the page has none: its token comes from another page).
    await holder.get('/login')
    const refused = await holder.post('/confirm-email', { token: tokenOf(link) })
    expect(refused.statusCode).toBe(303)
    const back = `/confirm-email?token=${tokenOf(link)}`
    expect(refused.headers.location).toBe(`/login?${new URLSearchParams({ next: back })}`)
    expect((await userRow('requester@example.com')).email).toBe('requester@example.com')

    const stranger = await browser().signUpAndLogIn('stranger@example.com', PASSWORD)
    await stranger.get(link)
    expect((await stranger.post('/confirm-email', { token: tokenOf(link) })).statusCode).toBe(403)

    const loggedIn = await holder.logIn('requester@example.com', PASSWORD, back)
    expect(loggedIn.headers.location).toBe(back)
    const named = await holder.get(back)
    expect(named.body).toContain('The account <strong>requester@example.com</strong> will use <strong>requested@example.com</strong>')
    expect((await holder.post('/confirm-email', { token: tokenOf(link) })).headers.location).toBe('/account?email_changed=1')
    expect((await userRow('requested@example.com')).email_verified_at).not.toBeNull()
  })
})
