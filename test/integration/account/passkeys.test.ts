import { describe, expect, it } from 'vitest'
import { TEST_ISSUER } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { type SoftCredential, authenticationResponse, newCredential, registrationResponse } from '../../helpers/soft-authenticator.js'
import { testAppFile } from '../../helpers/file-set-up.js'

/*
 * Passkeys (docs/accounts.md "Passkeys"): the page, the JSON endpoints of adding one and of
 * "Sign in with a passkey", and the second-factor step's use case. A software authenticator
 * (test/helpers/soft-authenticator.ts) answers as a browser would; Chromium's virtual
 * authenticator drives the same flows in test/browser/passkeys.test.ts.
 */

const PASSWORD = 'correct horse battery'
const ORIGIN = TEST_ISSUER
const { t } = testAppFile({ LOGIN_ADDRESS_FAILURE_LIMIT: '4', LOGIN_ADDRESS_ATTEMPT_LIMIT: '12' })

let n = 0
const browser = () => new BrowserSession(t.app, `198.51.100.${++n}`)

async function addPasskey(s: BrowserSession, credential = newCredential(), name = 'Laptop', password = PASSWORD) {
  await s.get('/account/passkeys')
  const start = await s.postJson('/account/passkeys/registration-options', {})
  expect(start.statusCode, start.body).toBe(200)
  const { options } = start.json()
  const res = await s.postJson('/account/passkeys/registration', {
    name,
    password,
    response: registrationResponse(credential, options, ORIGIN),
  })
  return { res, credential, options }
}

async function signIn(s: BrowserSession, credential: SoftCredential, next?: string, overrides = {}) {
  await s.get(next ? `/login?next=${encodeURIComponent(next)}` : '/login')
  const start = await s.postJson('/login/passkey/options', {})
  expect(start.statusCode, start.body).toBe(200)
  const { options } = start.json()
  const challengeCookie = s.cookies.get('gatehouse_webauthn')!
  const response = authenticationResponse(credential, options, ORIGIN, overrides)
  return { res: await s.postJson('/login/passkey', { next: next ?? '', response }), options, response, challengeCookie }
}

const userRow = (email: string) => t.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirstOrThrow()
const events = async (userId: string) =>
  (await t.db.selectFrom('audit_events').select(['event', 'detail']).where('user_id', '=', userId).execute()).map((e) => e.event)

describe('the passkeys page', () => {
  it('needs a log-in, is linked from Account, and says without JavaScript that adding one needs it', async () => {
    expect((await t.app.inject('/account/passkeys')).headers.location).toBe('/login?next=%2Faccount%2Fpasskeys')
    const s = await browser().signUpAndLogIn('page@example.com', PASSWORD)
    expect((await s.get('/account')).body).toContain('<a href="/account/passkeys">Passkeys</a>')
    const page = await s.get('/account/passkeys')
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('Adding a passkey needs JavaScript')
    expect(page.body).toMatch(/<form [^>]*data-passkey="register"[^>]* hidden>/)
  })

  it('allows the two passkey scripts on the passkey pages only, by their full URL', async () => {
    const s = await browser().signUpAndLogIn('csp@example.com', PASSWORD)
    const scripts = `script-src ${ORIGIN}/static/webauthn-browser.js ${ORIGIN}/static/passkeys.js`
    for (const url of ['/account/passkeys', '/login']) {
      const page = url === '/login' ? await t.app.inject(url) : await s.get(url)
      expect(page.headers['content-security-policy']).toContain(scripts)
      expect(page.body).toContain('<script src="/static/passkeys.js" defer></script>')
    }
    for (const url of ['/account', '/applications']) {
      const page = await s.get(url)
      expect(page.headers['content-security-policy']).toContain("script-src 'none'")
      expect(page.body).not.toContain('<script')
    }
    for (const path of ['/static/webauthn-browser.js', '/static/passkeys.js']) {
      const script = await t.app.inject(path)
      expect(script.statusCode).toBe(200)
      expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8')
      expect(script.headers['x-content-type-options']).toBe('nosniff')
    }
    expect((await t.app.inject('/static/webauthn-browser.js')).body).toContain('SimpleWebAuthnBrowser')
  })
})

describe('adding a passkey', () => {
  it('registers a discoverable, user-verified passkey, marks the second factor, records and mails it', async () => {
    const s = await browser().signUpAndLogIn('add@example.com', PASSWORD)
    const { res, options } = await addPasskey(s)
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toEqual({ redirect: '/account/passkeys?added=1' })
    expect(options.authenticatorSelection).toMatchObject({ residentKey: 'required', userVerification: 'required' })
    expect(options.rp.id).toBe('gatehouse.test')
    const user = await userRow('add@example.com')
    expect(options.user.id).toBe(Buffer.from(user.id).toString('base64url'))
    expect(user.second_factor).toBe(true)
    const page = await s.get('/account/passkeys?added=1')
    expect(page.body).toContain('Your passkey was added')
    expect(page.body).toContain('<h3>Laptop</h3>')
    expect(page.body).toContain('Last used: never')
    expect(await events(user.id)).toContain('user.passkey_added')
    expect(t.mailbox.to('add@example.com').at(-1)!.subject).toMatch(/^A passkey was added to your account/)
    // The second options exclude the passkey already registered.
    await s.get('/account/passkeys')
    const again = (await s.postJson('/account/passkeys/registration-options', {})).json()
    expect(again.options.excludeCredentials).toHaveLength(1)
  })

  it('counts the registering session as having used the passkey (REQUIRE_TWO_FACTOR), and only that session', async () => {
    const s = await browser().signUpAndLogIn('add-amr@example.com', PASSWORD)
    const other = browser()
    await other.logIn('add-amr@example.com', PASSWORD)
    const user = await userRow('add-amr@example.com')
    expect((await addPasskey(s)).res.statusCode).toBe(200)
    // The other browser's session ended (adding a factor closes the other doors); the registering
    // one stays, with the passkey among its methods.
    const sessions = await t.db.selectFrom('sessions').select('amr').where('user_id', '=', user.id).execute()
    expect(sessions.map((row) => row.amr)).toEqual([['pwd', 'hwk', 'mfa']])
    expect((await other.get('/account/passkeys')).headers.location).toMatch(/^\/login/)
  })

  it('refuses a registration whose challenge is missing, reused, expired or another account’s, and a wrong origin', async () => {
    const s = await browser().signUpAndLogIn('add-refusals@example.com', PASSWORD)
    await s.get('/account/passkeys')
    const { options } = (await s.postJson('/account/passkeys/registration-options', {})).json()
    const response = registrationResponse(newCredential(), options, ORIGIN)
    const cookie = [...s.cookies].find(([k]) => k === 'gatehouse_webauthn')!
    s.cookies.delete('gatehouse_webauthn')
    const missing = await s.postJson('/account/passkeys/registration', { password: PASSWORD, response })
    expect(missing.statusCode).toBe(400)
    expect(missing.json().error).toMatch(/expired or was already used/)

    s.cookies.set(...cookie)
    const wrongOrigin = await s.postJson('/account/passkeys/registration', {
      password: PASSWORD,
      response: registrationResponse(newCredential(), options, 'https://evil.example'),
    })
    expect(wrongOrigin.statusCode).toBe(400)
    expect(wrongOrigin.json().error).toMatch(/could not be verified/)
    s.cookies.set(...cookie)
    const reused = await s.postJson('/account/passkeys/registration', { password: PASSWORD, response })
    expect(reused.json().error).toMatch(/expired or was already used/)

    const other = await browser().signUpAndLogIn('add-other@example.com', PASSWORD)
    await s.get('/account/passkeys')
    const fresh = (await s.postJson('/account/passkeys/registration-options', {})).json()
    other.cookies.set('gatehouse_webauthn', s.cookies.get('gatehouse_webauthn')!)
    await other.get('/account/passkeys')
    const stolen = await other.postJson('/account/passkeys/registration', {
      password: PASSWORD,
      response: registrationResponse(newCredential(), fresh.options, ORIGIN),
    })
    expect(stolen.json().error).toMatch(/expired or was already used/)

    await s.get('/account/passkeys')
    const late = (await s.postJson('/account/passkeys/registration-options', {})).json()
    t.clock.advance(5 * 60_000 + 1)
    const expired = await s.postJson('/account/passkeys/registration', {
      password: PASSWORD,
      response: registrationResponse(newCredential(), late.options, ORIGIN),
    })
    expect(expired.json().error).toMatch(/expired or was already used/)

    await s.get('/account/passkeys')
    const noUv = (await s.postJson('/account/passkeys/registration-options', {})).json()
    const unverified = await s.postJson('/account/passkeys/registration', {
      password: PASSWORD,
      response: registrationResponse(newCredential(), noUv.options, ORIGIN, { userVerified: false }),
    })
    expect(unverified.statusCode).toBe(400)
    expect((await userRow('add-refusals@example.com')).second_factor).toBe(false)
  })

  it('answers bad JSON, a missing CSRF token, another site and a logged-out browser with JSON, never a page', async () => {
    const s = await browser().signUpAndLogIn('add-json@example.com', PASSWORD)
    await s.get('/account/passkeys')
    for (const url of [
      '/account/passkeys/registration',
      '/account/passkeys/registration-options',
      '/login/passkey',
      '/login/passkey/options',
    ]) {
      const bad = await s.postJson(url, '{"_csrf": ')
      expect(bad.statusCode, url).toBe(400)
      expect(bad.headers['content-type']).toMatch(/^application\/json/)
      expect(bad.json().error).toMatch(/not understood/)
      const noCsrf = await s.postJson(url, { _csrf: undefined })
      expect(noCsrf.statusCode, url).toBe(403)
      expect(noCsrf.json().error).toMatch(/expired/)
      const foreignHeaders: Array<Record<string, string>> = [
        { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
        { origin: 'http://evil.gatehouse.test', 'sec-fetch-site': 'same-site' },
        { origin: 'null' },
        { origin: 'https://gatehouse.test' },
      ]
      for (const headers of foreignHeaders) {
        const foreign = await s.postJson(url, {}, headers)
        expect(foreign.statusCode, `${url} ${JSON.stringify(headers)}`).toBe(403)
        expect(foreign.json().error).toMatch(/another site/)
      }
      expect((await s.postJson(url, {}, { origin: ORIGIN, 'sec-fetch-site': 'same-origin' })).statusCode, url).not.toBe(403)
      const notObject = await s.postJson(url, { response: 'x'.repeat(10) })
      expect(notObject.statusCode, url).toBeLessThan(500)
    }
    const loggedOut = browser()
    await loggedOut.get('/login')
    const res = await loggedOut.postJson('/account/passkeys/registration-options', {})
    expect(res.statusCode).toBe(401)
  })

  it('caps an account at 10 passkeys', async () => {
    const s = await browser().signUpAndLogIn('cap@example.com', PASSWORD)
    const user = await userRow('cap@example.com')
    const rows = Array.from({ length: 9 }, (_, i) => ({
      id: `cap-${i}`,
      user_id: user.id,
      public_key: new Uint8Array([1]),
      counter: 0,
      name: `Key ${i}`,
      backed_up: false,
      created_at: new Date(),
    }))
    await t.db.insertInto('passkeys').values(rows).execute()
    // The options of the tenth are issued, then another tab fills the last place first.
    await s.get('/account/passkeys')
    const { options } = (await s.postJson('/account/passkeys/registration-options', {})).json()
    const first = s.cookies.get('gatehouse_webauthn')!
    expect((await addPasskey(s)).res.statusCode).toBe(200)
    s.cookies.set('gatehouse_webauthn', first)
    const over = await s.postJson('/account/passkeys/registration', {
      password: PASSWORD,
      response: registrationResponse(newCredential(), options, ORIGIN),
    })
    expect(over.statusCode).toBe(400)
    expect(over.json().error).toMatch(/at most 10 passkeys/)
    expect((await s.get('/account/passkeys')).body).toContain('the most it may have')
    const refused = await s.postJson('/account/passkeys/registration-options', {})
    expect(refused.json().error).toMatch(/at most 10 passkeys/)
  })
})

describe('renaming and removing', () => {
  it('renames with a bounded name, removes with the password, and touches only the owner’s passkeys', async () => {
    const s = await browser().signUpAndLogIn('manage@example.com', PASSWORD)
    // Logged in with the password alone while the account had no factor (the session that adds the
    // passkey proves it doing so: docs/decisions/011-second-factor.md).
    // Adding the passkey ends that session; its row is put back afterwards, as a password-only
    // session that outlived the account's first factor would be.
    const passwordOnly = browser()
    await passwordOnly.logIn('manage@example.com', PASSWORD)
    const ownerId = (await userRow('manage@example.com')).id
    const before = await t.db.selectFrom('sessions').selectAll().where('user_id', '=', ownerId).execute()
    const { credential } = await addPasskey(s)
    const left = new Set(
      (await t.db.selectFrom('sessions').select('id_hash').where('user_id', '=', ownerId).execute()).map((row) => row.id_hash),
    )
    const ended = before.filter((row) => !left.has(row.id_hash))
    expect(ended).toHaveLength(1)
    await t.db.insertInto('sessions').values(ended).execute()
    const id = credential.id.toString('base64url')
    await s.get('/account/passkeys')
    expect((await s.post('/account/passkeys/rename', { id, name: '  Phone  ' })).headers.location).toBe('/account/passkeys?renamed=1')
    expect((await s.get('/account/passkeys')).body).toContain('<h3>Phone</h3>')
    expect((await s.post('/account/passkeys/rename', { id, name: ' ' })).statusCode).toBe(400)
    expect((await s.post('/account/passkeys/rename', { id, name: 'x'.repeat(65) })).statusCode).toBe(400)

    const other = await browser().signUpAndLogIn('manage-other@example.com', PASSWORD)
    await other.get('/account/passkeys')
    expect((await other.post('/account/passkeys/rename', { id, name: 'Mine' })).statusCode).toBe(404)
    expect((await other.post('/account/passkeys/remove', { id, password: PASSWORD })).statusCode).toBe(404)

    await passwordOnly.get('/account/passkeys')
    const wrong = await passwordOnly.post('/account/passkeys/remove', { id, password: 'not the password' })
    expect(wrong.statusCode).toBe(400)
    expect(wrong.body).toContain('The password is not right')
    expect((await passwordOnly.post('/account/passkeys/remove', { id })).statusCode).toBe(400)
    // The account's last second factor: the password alone, in a session logged in with the
    // password alone, does not remove it (docs/accounts.md "Passkeys").
    const kept = await passwordOnly.post('/account/passkeys/remove', { id, password: PASSWORD })
    expect(kept.statusCode).toBe(400)
    expect(kept.body).toContain('last second factor')
    expect((await userRow('manage@example.com')).second_factor).toBe(true)
    expect(await t.db.selectFrom('passkeys').select('id').where('id', '=', id).execute()).toHaveLength(1)
    // Logged in with the passkey just now: the same form removes it.
    const fresh = browser()
    expect((await signIn(fresh, credential)).res.statusCode).toBe(200)
    await fresh.get('/account/passkeys')
    expect((await fresh.post('/account/passkeys/remove', { id, password: PASSWORD })).headers.location).toBe('/account/passkeys?removed=1')
    const user = await userRow('manage@example.com')
    expect(user.second_factor).toBe(false)
    expect(await events(user.id)).toEqual(expect.arrayContaining(['user.passkey_renamed', 'user.passkey_removed']))
    expect(t.mailbox.to('manage@example.com').at(-1)!.subject).toMatch(/^A passkey was removed/)
    // The removed passkey no longer signs in.
    const after = await signIn(browser(), credential)
    expect(after.res.statusCode).toBe(400)
    expect(after.res.json().error).toMatch(/not registered here/)
  })

  it('refuses forms without the CSRF token or from another site', async () => {
    const s = await browser().signUpAndLogIn('manage-csrf@example.com', PASSWORD)
    const { credential } = await addPasskey(s)
    const id = credential.id.toString('base64url')
    await s.get('/account/passkeys')
    for (const url of ['/account/passkeys/rename', '/account/passkeys/remove']) {
      expect((await s.post(url, { _csrf: null, id, name: 'x', password: PASSWORD })).statusCode).toBe(403)
      const foreign = await s.post(url, { id, name: 'x', password: PASSWORD }, { origin: 'https://evil.example' })
      expect(foreign.statusCode).toBe(403)
    }
    expect(await t.db.selectFrom('passkeys').select('name').where('id', '=', id).executeTakeFirst()).toEqual({ name: 'Laptop' })
  })
})

describe('signing in with a passkey', () => {
  it('starts a session as the password form does, with amr hwk and mfa, and goes to next', async () => {
    const owner = await browser().signUpAndLogIn('signin@example.com', PASSWORD)
    const { credential } = await addPasskey(owner)
    credential.counter = 5
    await t.db.updateTable('passkeys').set({ counter: 4 }).where('id', '=', credential.id.toString('base64url')).execute()

    const s = browser()
    s.cookies.set('gatehouse_session', 'planted-by-someone')
    const csrfBefore = (await s.get('/login'), s.cookies.get('gatehouse_csrf'))
    const { res } = await signIn(s, credential, '/account/sessions')
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toEqual({ redirect: '/account/sessions' })
    expect(s.cookies.get('gatehouse_session')).not.toBe('planted-by-someone')
    expect(s.cookies.get('gatehouse_device')).toBeDefined()
    expect(s.cookies.get('gatehouse_csrf')).not.toBe(csrfBefore)
    expect(s.cookies.has('gatehouse_webauthn')).toBe(false)
    expect((await s.get('/account/sessions')).statusCode).toBe(200)

    const user = await userRow('signin@example.com')
    const sessions = await t.db.selectFrom('sessions').select('amr').where('user_id', '=', user.id).execute()
    expect(sessions.map((r) => r.amr)).toContainEqual(['hwk', 'mfa'])
    const stored = await t.db
      .selectFrom('passkeys')
      .selectAll()
      .where('id', '=', credential.id.toString('base64url'))
      .executeTakeFirstOrThrow()
    expect(Number(stored.counter)).toBe(6)
    expect(stored.last_used_at).not.toBeNull()
    const logIns = await t.db
      .selectFrom('audit_events')
      .select('detail')
      .where('user_id', '=', user.id)
      .where('event', '=', 'user.logged_in')
      .execute()
    expect(logIns.at(-1)!.detail).toMatch(/^With a passkey/)
    // An unsafe next is dropped, as the log-in form drops it.
    expect((await signIn(browser(), credential, '//evil.example')).res.json()).toEqual({ redirect: '/applications' })
  })

  it('refuses a reused or expired challenge, a wrong origin, an unknown credential and no user verification, as 400 JSON', async () => {
    const owner = await browser().signUpAndLogIn('signin-refusals@example.com', PASSWORD)
    const { credential } = await addPasskey(owner)
    const s = browser()
    const { res, response, challengeCookie } = await signIn(s, credential)
    expect(res.statusCode).toBe(200)
    const again = browser()
    await again.get('/login')
    again.cookies.set('gatehouse_webauthn', challengeCookie)
    const replay = await again.postJson('/login/passkey', { response })
    expect(replay.statusCode).toBe(400)
    expect(replay.json().error).toMatch(/expired or was already used/)

    const late = browser()
    await late.get('/login')
    const { options } = (await late.postJson('/login/passkey/options', {})).json()
    t.clock.advance(5 * 60_000 + 1)
    const expired = await late.postJson('/login/passkey', { response: authenticationResponse(credential, options, ORIGIN) })
    expect(expired.json().error).toMatch(/expired/)

    const cases: Array<[string, Parameters<typeof signIn>[3], RegExp, SoftCredential?]> = [
      ['wrong origin', { origin: 'https://evil.example' }, /could not be verified/],
      ['wrong RP ID', { rpId: 'evil.example' }, /could not be verified/],
      ['no user verification', { userVerified: false }, /could not be verified/],
      ['registration data', { type: 'webauthn.create' }, /could not be verified/],
      ['unknown credential', {}, /not registered here/, newCredential()],
    ]
    for (const [what, overrides, error, other] of cases) {
      const attempt = await signIn(browser(), other ?? credential, undefined, overrides)
      expect(attempt.res.statusCode, what).toBe(400)
      expect(attempt.res.json().error, what).toMatch(error)
    }
    const garbage = browser()
    await garbage.get('/login')
    await garbage.postJson('/login/passkey/options', {})
    const malformed = await garbage.postJson('/login/passkey', { response: { id: 'x', type: 'public-key', response: 7 } })
    expect(malformed.statusCode).toBe(400)
  })

  it('refuses and records a counter that goes backwards or falls to 0, never lowers it, and refuses a suspended account', async () => {
    const owner = await browser().signUpAndLogIn('signin-counter@example.com', PASSWORD)
    const { credential } = await addPasskey(owner)
    const id = credential.id.toString('base64url')
    await t.db.updateTable('passkeys').set({ counter: 10 }).where('id', '=', id).execute()
    credential.counter = 5
    const cloned = await signIn(browser(), credential)
    expect(cloned.res.statusCode).toBe(400)
    expect(cloned.res.json().error).toMatch(/was refused/)
    const user = await userRow('signin-counter@example.com')
    expect(await events(user.id)).toContain('user.passkey_counter_refused')
    expect(Number((await t.db.selectFrom('passkeys').select('counter').where('id', '=', id).executeTakeFirstOrThrow()).counter)).toBe(10)
    // A counter that was non-zero never takes a 0 (it would reset clone detection), nor its own value.
    for (const replayed of [0, 10]) {
      credential.counter = replayed === 0 ? 0 : replayed - 1 // the authenticator counts up before it signs
      const zero = await signIn(browser(), credential)
      expect(zero.res.statusCode, `counter ${replayed}`).toBe(400)
      expect(zero.res.json().error).toMatch(/was refused/)
    }
    expect(Number((await t.db.selectFrom('passkeys').select('counter').where('id', '=', id).executeTakeFirstOrThrow()).counter)).toBe(10)
    credential.counter = 10 // the next assertion reports 11
    expect((await signIn(browser(), credential)).res.statusCode).toBe(200)
    expect(Number((await t.db.selectFrom('passkeys').select('counter').where('id', '=', id).executeTakeFirstOrThrow()).counter)).toBe(11)

    await t.db.updateTable('users').set({ suspended_at: new Date() }).where('id', '=', user.id).execute()
    const suspended = await signIn(browser(), credential)
    expect(suspended.res.statusCode).toBe(403)
    expect(suspended.res.json().error).toMatch(/cannot log in/)
  })

  it('counts failures per address like password log-ins', async () => {
    const s = browser()
    for (let i = 0; i < 4; i++) expect((await signIn(s, newCredential())).res.statusCode).toBe(400)
    const limited = await signIn(s, newCredential())
    expect(limited.res.statusCode).toBe(429)
    expect(Number(limited.res.headers['retry-after'])).toBeGreaterThan(0)
    // The password form from that address is refused too: one count.
    await s.get('/login')
    expect((await s.post('/login', { email: 'nobody@example.com', password: PASSWORD })).statusCode).toBe(429)
  })

  it('counts every sign-in attempt per address, successful ones included (LOGIN_ADDRESS_ATTEMPT_LIMIT)', async () => {
    const owner = await browser().signUpAndLogIn('signin-attempts@example.com', PASSWORD)
    const { credential } = await addPasskey(owner)
    const address = `203.0.113.${++n}`
    // The owner's log-in above spent one attempt of another address; these 12 all succeed.
    for (let i = 0; i < 12; i++) expect((await signIn(new BrowserSession(t.app, address), credential)).res.statusCode).toBe(200)
    const s = new BrowserSession(t.app, address)
    await s.get('/login')
    const refused = await s.postJson('/login/passkey/options', {})
    expect(refused.statusCode).toBe(429)
    expect(refused.json().error).toMatch(/Too many attempts/)
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
  })
})

describe('the second-factor step’s use case', () => {
  it('verifies an assertion of the account’s own passkeys only, once per challenge', async () => {
    const owner = await browser().signUpAndLogIn('second@example.com', PASSWORD)
    const { credential } = await addPasskey(owner)
    const stranger = await browser().signUpAndLogIn('second-other@example.com', PASSWORD)
    const { credential: theirs } = await addPasskey(stranger)
    const user = await userRow('second@example.com')
    const actor = { userId: null, address: null }
    const { accounts } = t.deps

    const optionsFor = async (userId: string) => {
      const result = await accounts.passkeyOptionsForUser(userId, '192.0.2.98')
      if (result.kind !== 'ok') throw new Error(`options not issued: ${result.kind}`)
      return result
    }
    const issued = await optionsFor(user.id)
    expect(issued.options.allowCredentials).toEqual([
      { id: credential.id.toString('base64url'), type: 'public-key', transports: ['internal'] },
    ])
    expect(issued.options.userVerification).toBe('required')
    const response = authenticationResponse(credential, issued.options, ORIGIN)
    expect(await accounts.verifyPasskeyForUser(actor, user.id, { response, challengeId: issued.challengeId })).toEqual({
      kind: 'ok',
      passkeyName: 'Laptop',
    })
    expect(await accounts.verifyPasskeyForUser(actor, user.id, { response, challengeId: issued.challengeId })).toEqual({
      kind: 'failed',
      reason: 'expired',
    })
    const next = await optionsFor(user.id)
    const foreign = authenticationResponse(theirs, next.options, ORIGIN)
    expect(await accounts.verifyPasskeyForUser(actor, user.id, { response: foreign, challengeId: next.challengeId })).toEqual({
      kind: 'failed',
      reason: 'unknown-credential',
    })
    // A passwordless challenge (bound to no account) is not one of the step's.
    const anonymous = await accounts.passkeyLoginOptions('192.0.2.99')
    if (anonymous.kind !== 'ok') throw new Error('options refused')
    const wrongKind = authenticationResponse(credential, anonymous.options, ORIGIN)
    expect(await accounts.verifyPasskeyForUser(actor, user.id, { response: wrongKind, challengeId: anonymous.challengeId })).toEqual({
      kind: 'failed',
      reason: 'expired',
    })
    expect(await accounts.passkeyOptionsForUser((await userRow('add-json@example.com')).id, '192.0.2.98')).toEqual({ kind: 'none' })
  })
})
