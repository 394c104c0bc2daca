import type { LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { newCredential, registrationResponse } from '../../helpers/soft-authenticator.js'

/*
 * Passkeys are offered only where WebAuthn can work (docs/accounts.md "Passkeys",
 * src/lib/passkey-availability.ts): PUBLIC_URL's host must be a domain name (localhost included),
 * never an IP address, which browsers refuse as a relying party id. Two apps on one database,
 * the same but for PUBLIC_URL: at http://localhost:3000 the pages offer passkeys; at
 * http://127.0.0.1:3000 they say why not, and every passkey endpoint refuses with those words.
 */

const PASSWORD = 'correct horse battery'
const UNAVAILABLE =
  'Passkeys are not available on this server because it is reached at an IP address; ask the operator to serve it at a domain name.'
const LOCALHOST = 'http://localhost:3000'

let byName: TestContext
let byAddress: TestContext
beforeAll(async () => {
  // `all`: every account must enrol first, so the enrol-first page is one request away.
  byName = await buildTestApp({ PUBLIC_URL: LOCALHOST, REQUIRE_TWO_FACTOR: 'all' })
  byAddress = await buildTestApp({ PUBLIC_URL: 'http://127.0.0.1:3000', REQUIRE_TWO_FACTOR: 'all' }, byName.testDb)
})
afterAll(async () => {
  await byAddress?.close()
  await byName?.close()
})

let n = 0
const browser = (t: TestContext) => new BrowserSession(t.app, `198.51.100.${++n}`)

const refused = (res: LightMyRequestResponse) => {
  expect(res.statusCode, res.body).toBe(409)
  expect(res.json()).toEqual({ error: UNAVAILABLE })
}

describe('the log-in page', () => {
  it('offers "Sign in with a passkey" at a domain name, and at an IP address neither the button, its script nor its endpoints', async () => {
    const named = await browser(byName).get('/login')
    expect(named.body).toContain('Sign in with a passkey')
    expect(named.headers['content-security-policy']).toContain('/static/passkeys.js')
    const s = browser(byName)
    await s.get('/login')
    expect((await s.postJson('/login/passkey/options')).statusCode).toBe(200)

    const ip = browser(byAddress)
    const page = await ip.get('/login')
    expect(page.statusCode).toBe(200)
    expect(page.body).not.toContain('Sign in with a passkey')
    expect(page.body).not.toContain('data-passkey')
    expect(page.headers['content-security-policy']).not.toContain('/static/passkeys.js')
    refused(await ip.postJson('/login/passkey/options'))
    refused(await ip.postJson('/login/passkey', { response: {} }))
  })
})

describe('the passkeys page and the enrol-first page', () => {
  it('say why at an IP address, and adding a passkey is refused there', async () => {
    const named = await browser(byName).signUpAndLogIn('named@example.com', PASSWORD)
    const namedPage = await named.get('/account/passkeys')
    expect(namedPage.body).toContain('data-passkey="register"')
    expect(namedPage.body).not.toContain(UNAVAILABLE)
    const namedGate = await named.get('/applications')
    expect(namedGate.statusCode).toBe(403)
    expect(namedGate.body).toContain('<a href="/account/passkeys">Add a passkey</a>')

    const ip = await browser(byAddress).signUpAndLogIn('ip@example.com', PASSWORD)
    const gate = await ip.get('/applications')
    expect(gate.statusCode).toBe(403)
    expect(gate.body).toContain('Set up an authenticator app')
    expect(gate.body).not.toContain('Add a passkey</a>')
    expect(gate.body).toContain(UNAVAILABLE)
    const page = await ip.get('/account/passkeys')
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain(UNAVAILABLE)
    expect(page.body).not.toContain('data-passkey')
    expect(page.headers['content-security-policy']).not.toContain('/static/passkeys.js')
    refused(await ip.postJson('/account/passkeys/registration-options'))
    refused(await ip.postJson('/account/passkeys/registration', { name: 'Laptop', response: {} }))
    expect(await byAddress.db.selectFrom('passkeys').select('id').execute()).toHaveLength(0)
  })
})

describe("the log-in's second step", () => {
  it('offers a passkey at a domain name; at an IP address says why, and refuses the passkey step', async () => {
    const email = 'second-step@example.com'
    const s = await browser(byName).signUpAndLogIn(email, PASSWORD)
    await s.get('/account/passkeys')
    const start = await s.postJson('/account/passkeys/registration-options')
    expect(start.statusCode, start.body).toBe(200)
    const { options } = start.json()
    const added = await s.postJson('/account/passkeys/registration', {
      name: 'Laptop',
      password: PASSWORD,
      response: registrationResponse(newCredential(), options, LOCALHOST),
    })
    expect(added.statusCode, added.body).toBe(200)

    const again = browser(byName)
    expect((await again.logIn(email, PASSWORD)).headers.location).toBe('/login/second-factor')
    expect((await again.get('/login/second-factor')).body).toContain('data-passkey="sign-in"')

    const ip = browser(byAddress)
    expect((await ip.logIn(email, PASSWORD)).headers.location).toBe('/login/second-factor')
    const step = await ip.get('/login/second-factor')
    expect(step.statusCode).toBe(200)
    expect(step.body).toContain(UNAVAILABLE)
    expect(step.body).not.toContain('data-passkey')
    refused(await ip.postJson('/login/second-factor/passkey/options'))
    refused(await ip.postJson('/login/second-factor/passkey', { response: {} }))
  })
})
