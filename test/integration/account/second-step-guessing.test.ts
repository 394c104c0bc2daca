import { describe, expect, it } from 'vitest'
import { SESSION_COOKIE } from '../../../src/http/session.js'
import { TEST_ISSUER, buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { testAppFile } from '../../helpers/file-set-up.js'
import { authenticationResponse, newCredential, registrationResponse } from '../../helpers/soft-authenticator.js'
import { STEP_MS, enrolTotp, totpCode } from '../../helpers/totp.js'

/*
 * What bounds guessing the second factor (docs/accounts.md "Two-factor authentication", docs/operating/limits.md; docs/decisions/011-second-factor.md, "Guessing the second step"): one bucket of wrong
 * codes per account whatever the device cookie or address, /reauth's codes in it too, the
 * authenticator app's lock after SECOND_FACTOR_LOCK_AFTER wrong codes in a row, one mail to the
 * owner per burst, the pending log-in's five tries taken atomically, the passkey signature counter
 * never lowered, and WebAuthn challenges within WEBAUTHN_CHALLENGE_LIMIT per account and
 * LOGIN_ADDRESS_ATTEMPT_LIMIT per client address. Time is the app's clock.
 */

const PASSWORD = 'correct horse battery'
const LOCK_AFTER = 12
const { t } = testAppFile({ SECOND_FACTOR_LOCK_AFTER: String(LOCK_AFTER), WEBAUTHN_CHALLENGE_LIMIT: '3' })

let n = 0
const address = () => `198.51.100.${++n}`
const browser = () => new BrowserSession(t.app, address())
const now = () => t.clock()
const userId = async (email: string) =>
  (await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()).id
const WRONG_MAIL = 'A wrong two-factor code was typed for your account'
const LOCKED_MAIL = 'Authenticator app codes are locked for your account'
const mailsTo = (email: string, subject: string) => t.mailbox.to(email).filter((m) => m.subject.includes(subject))
const eventsOf = async (email: string, event: string) =>
  t.db
    .selectFrom('audit_events')
    .select('detail')
    .where('user_id', '=', await userId(email))
    .where('event', '=', event)
    .execute()

/** A code of the app, but not a current one: always wrong. */
const wrongCode = (secret: string) => totpCode(secret, new Date(now().getTime() + 20 * STEP_MS))

async function enrolled(email: string) {
  const s = await browser().signUpAndLogIn(email, PASSWORD)
  const { secret, recoveryCodes } = await enrolTotp(s, now)
  t.clock.advance(STEP_MS)
  return { s, secret, recoveryCodes }
}

/** A browser (with these cookies, e.g. a device cookie) past the password and at the second step. */
async function passwordStep(email: string, s = browser()): Promise<BrowserSession> {
  const res = await s.logIn(email, PASSWORD)
  expect(res.headers.location).toBe('/login/second-factor')
  await s.get('/login/second-factor')
  return s
}

async function addPasskey(s: BrowserSession) {
  const credential = newCredential()
  await s.get('/account/passkeys')
  const { options } = (await s.postJson('/account/passkeys/registration-options')).json()
  const res = await s.postJson('/account/passkeys/registration', {
    name: 'Key',
    password: PASSWORD,
    response: registrationResponse(credential, options, TEST_ISSUER),
  })
  expect(res.statusCode, res.body).toBe(200)
  return credential
}

describe('wrong second-factor codes of one account', () => {
  it('count in one bucket whatever device cookie each browser shows, and the owner gets one mail per burst', async () => {
    const email = 'devices@example.com'
    // Browsers that logged in before the app was set up, each holding a device cookie of the account.
    const first = await browser().signUpAndLogIn(email, PASSWORD)
    const devices = [first]
    for (let i = 0; i < 2; i++) {
      const s = browser()
      await s.logIn(email, PASSWORD)
      devices.push(s)
    }
    for (const s of devices) expect(s.cookies.has('gatehouse_device')).toBe(true)
    const { secret } = await enrolTotp(first, now)
    t.clock.advance(STEP_MS)
    await first.post('/logout', {})

    const steps = [await passwordStep(email, devices[0]), await passwordStep(email, devices[1]), await passwordStep(email, devices[2])]
    // LOGIN_FAILURE_LIMIT (10) wrong codes in all, spread over the three devices and addresses.
    for (const [i, tries] of [4, 4, 2].entries()) {
      for (let k = 0; k < tries; k++)
        expect((await steps[i]!.post('/login/second-factor', { code: wrongCode(secret) })).statusCode).toBe(401)
    }
    const refused = await steps[2]!.post('/login/second-factor', { code: wrongCode(secret) })
    expect(refused.statusCode).toBe(429)
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
    // The right code too, from any of them, until the window ends.
    expect((await steps[0]!.post('/login/second-factor', { code: totpCode(secret, now()) })).statusCode).toBe(429)

    const mails = mailsTo(email, WRONG_MAIL)
    expect(mails).toHaveLength(1)
    expect(mails[0]!.text).toContain(devices[0]!.remoteAddress)
    expect(mails[0]!.text).toContain(`${now().toISOString().slice(0, 10)}`)
    expect(await eventsOf(email, 'user.second_factor_failures_mailed')).toHaveLength(1)

    // A burst an hour later is mailed again, once; 12 in a row would lock the app (the next test).
    t.clock.advance(61 * 60_000)
    const later = await passwordStep(email)
    expect((await later.post('/login/second-factor', { code: wrongCode(secret) })).statusCode).toBe(401)
    expect(mailsTo(email, WRONG_MAIL)).toHaveLength(2)
    expect((await later.post('/login/second-factor', { code: totpCode(secret, now()) })).headers.location).toBe('/applications')
  })

  it('at /reauth count in the same bucket as at the log-in', async () => {
    const email = 'reauth-codes@example.com'
    const { s, secret } = await enrolled(email)
    for (let round = 0; round < 2; round++) {
      const step = await passwordStep(email)
      for (let k = 0; k < 3; k++) expect((await step.post('/login/second-factor', { code: wrongCode(secret) })).statusCode).toBe(401)
    }
    await s.get('/reauth')
    for (let k = 0; k < 4; k++) expect((await s.post('/reauth', { code: wrongCode(secret), next: '/account' })).statusCode).toBe(400)
    const refused = await s.post('/reauth', { code: wrongCode(secret), next: '/account' })
    expect(refused.statusCode).toBe(429)
    expect(mailsTo(email, WRONG_MAIL)).toHaveLength(1)
  })
})

describe('the authenticator app’s lock', () => {
  it(`engages after ${LOCK_AFTER} wrong codes in a row, refuses even the right code, and a recovery code lifts it`, async () => {
    const email = 'lock@example.com'
    const { s, secret, recoveryCodes } = await enrolled(email)
    let step = await passwordStep(email)
    for (let k = 0; k < LOCK_AFTER; k++) {
      if (k === 8) t.clock.advance(15 * 60_000) // a new window of the bucket: only the lock counts them all
      if (k % 4 === 0) step = await passwordStep(email)
      expect((await step.post('/login/second-factor', { code: wrongCode(secret) })).statusCode, `code ${k + 1}`).toBe(401)
    }
    const locked = await step.post('/login/second-factor', { code: totpCode(secret, now()) })
    expect(locked.statusCode).toBe(403)
    expect(locked.body).toContain('Use a recovery code or a passkey')
    expect(await eventsOf(email, 'user.second_factor_locked')).toEqual([{ detail: `${LOCK_AFTER} wrong codes in a row` }])
    expect(mailsTo(email, LOCKED_MAIL)).toHaveLength(1)
    expect(mailsTo(email, LOCKED_MAIL)[0]!.text).toContain(step.remoteAddress)
    // /reauth's code is locked too; the password still confirms.
    t.clock.advance(STEP_MS)
    await s.get('/reauth')
    expect((await s.post('/reauth', { code: totpCode(secret, now()), next: '/account' })).statusCode).toBe(403)

    const recovered = await step.post('/login/second-factor', { code: recoveryCodes[0]! })
    expect(recovered.headers.location).toBe('/applications')
    expect(step.cookies.has(SESSION_COOKIE)).toBe(true)
    const next = await passwordStep(email)
    expect((await next.post('/login/second-factor', { code: totpCode(secret, now()) })).headers.location).toBe('/applications')
    expect(mailsTo(email, LOCKED_MAIL)).toHaveLength(1)
  })

  it('is lifted by a passkey, and a right code in between starts the count again', async () => {
    const email = 'lock-passkey@example.com'
    const { s, secret } = await enrolled(email)
    const credential = await addPasskey(s)
    const id = await userId(email)
    const failedCodes = async () =>
      (await t.db.selectFrom('totp_secrets').select('failed_codes').where('user_id', '=', id).executeTakeFirstOrThrow()).failed_codes
    const step = await passwordStep(email)
    await step.post('/login/second-factor', { code: wrongCode(secret) })
    expect(await failedCodes()).toBe(1)
    expect((await step.post('/login/second-factor', { code: totpCode(secret, now()) })).headers.location).toBe('/applications')
    expect(await failedCodes()).toBe(0)

    await t.db.updateTable('totp_secrets').set({ failed_codes: LOCK_AFTER }).where('user_id', '=', id).execute()
    t.clock.advance(STEP_MS)
    const locked = await passwordStep(email)
    expect((await locked.post('/login/second-factor', { code: totpCode(secret, now()) })).statusCode).toBe(403)
    const { options } = (await locked.postJson('/login/second-factor/passkey/options')).json()
    const done = await locked.postJson('/login/second-factor/passkey', {
      response: authenticationResponse(credential, options, TEST_ISSUER),
    })
    expect(done.json()).toEqual({ redirect: '/applications' })
    expect(await failedCodes()).toBe(0)
  })
})

describe('the pending log-in’s five tries', () => {
  // The race shows on PostgreSQL (TEST_DATABASE_URL), where the requests run on several connections;
  // PGlite runs one statement at a time and passes either way.
  it('are taken in one statement: of many codes sent at once at most five are checked, and a right one after them fails', async () => {
    const email = 'parallel@example.com'
    const { secret } = await enrolled(email)
    const step = await passwordStep(email)
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => step.post('/login/second-factor', { code: wrongCode(secret) }).then((r) => r.statusCode)),
    )
    expect(answers.filter((status) => status === 401).length).toBeLessThanOrEqual(4)
    const checked = await eventsOf(email, 'user.login_failed')
    expect(checked.filter((e) => e.detail === 'Right password, wrong second-factor code').length).toBeLessThanOrEqual(5)
    expect((await step.post('/login/second-factor', { code: totpCode(secret, now()) })).headers.location).toBe(
      '/login?second_factor=expired',
    )
  })
})

describe('passkeys at the second step', () => {
  it('refuse a signature counter that falls to 0 or goes backwards, and never lower the stored one', async () => {
    const email = 'counter-step@example.com'
    const owner = await browser().signUpAndLogIn(email, PASSWORD)
    const credential = await addPasskey(owner)
    const credentialId = credential.id.toString('base64url')
    await t.db.updateTable('passkeys').set({ counter: 7 }).where('id', '=', credentialId).execute()
    t.clock.advance(15 * 60_000) // the registration's challenge out of WEBAUTHN_CHALLENGE_LIMIT's window
    const stored = async () =>
      Number((await t.db.selectFrom('passkeys').select('counter').where('id', '=', credentialId).executeTakeFirstOrThrow()).counter)

    const step = await passwordStep(email)
    for (const reported of [0, 7]) {
      credential.counter = reported === 0 ? 0 : reported - 1 // the authenticator counts up before it signs
      const { options } = (await step.postJson('/login/second-factor/passkey/options')).json()
      const refused = await step.postJson('/login/second-factor/passkey', {
        response: authenticationResponse(credential, options, TEST_ISSUER),
      })
      expect(refused.statusCode, `counter ${reported}`).toBe(400)
      expect(await stored()).toBe(7)
    }
    expect(await eventsOf(email, 'user.passkey_counter_refused')).toHaveLength(2)
    credential.counter = 7
    const { options } = (await step.postJson('/login/second-factor/passkey/options')).json()
    const done = await step.postJson('/login/second-factor/passkey', {
      response: authenticationResponse(credential, options, TEST_ISSUER),
    })
    expect(done.json()).toEqual({ redirect: '/applications' })
    expect(await stored()).toBe(8)
  })
})

describe('WebAuthn challenges', () => {
  it('are handed out within WEBAUTHN_CHALLENGE_LIMIT per account: registration options, then 429 JSON', async () => {
    const s = await browser().signUpAndLogIn('challenges@example.com', PASSWORD)
    await s.get('/account/passkeys')
    for (let i = 0; i < 3; i++) expect((await s.postJson('/account/passkeys/registration-options')).statusCode).toBe(200)
    // From another address too: the account's bound.
    const elsewhere = new BrowserSession(t.app, address())
    for (const [k, v] of s.cookies) elsewhere.cookies.set(k, v)
    elsewhere.lastCsrf = s.lastCsrf
    const refused = await elsewhere.postJson('/account/passkeys/registration-options')
    expect(refused.statusCode).toBe(429)
    expect(refused.headers['content-type']).toMatch(/^application\/json/)
    expect(refused.json().error).toMatch(/Too many attempts/)
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
  })

  it('count per client address too, whatever the account: LOGIN_ADDRESS_ATTEMPT_LIMIT an hour, then 429 JSON', async () => {
    const bounded = await buildTestApp({ LOGIN_ADDRESS_ATTEMPT_LIMIT: '4', WEBAUTHN_CHALLENGE_LIMIT: '3' }, t.testDb)
    try {
      const shared = address()
      /** The logged-in browser `s`, its requests now from `from`. */
      const movedTo = (s: BrowserSession, from: string) => {
        const moved = new BrowserSession(bounded.app, from)
        for (const [k, v] of s.cookies) moved.cookies.set(k, v)
        moved.lastCsrf = s.lastCsrf
        return moved
      }
      const signedUp = async (email: string) => {
        const s = await new BrowserSession(bounded.app, address()).signUpAndLogIn(email, PASSWORD)
        await s.get('/account/passkeys')
        return s
      }
      const first = movedTo(await signedUp('address-first@example.com'), shared)
      const second = await signedUp('address-second@example.com')
      // Three of the first account's (its own limit) and one of the second's fill the address's four.
      for (let i = 0; i < 3; i++) expect((await first.postJson('/account/passkeys/registration-options')).statusCode).toBe(200)
      expect((await movedTo(second, shared).postJson('/account/passkeys/registration-options')).statusCode).toBe(200)
      const refused = await movedTo(second, shared).postJson('/account/passkeys/registration-options')
      expect(refused.statusCode).toBe(429)
      expect(refused.json().error).toMatch(/Too many attempts/)
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
      // The second account has challenges left from another address: the refusal was the address's.
      expect((await movedTo(second, address()).postJson('/account/passkeys/registration-options')).statusCode).toBe(200)
    } finally {
      await bounded.close()
    }
  })

  it('of the second step count per account: options beyond the limit answer 429 JSON', async () => {
    const email = 'challenges-step@example.com'
    const owner = await browser().signUpAndLogIn(email, PASSWORD)
    await addPasskey(owner)
    t.clock.advance(15 * 60_000)
    const step = await passwordStep(email)
    for (let i = 0; i < 3; i++) expect((await step.postJson('/login/second-factor/passkey/options')).statusCode).toBe(200)
    const refused = await step.postJson('/login/second-factor/passkey/options')
    expect(refused.statusCode).toBe(429)
    expect(refused.json().error).toMatch(/Too many attempts/)
  })
})
