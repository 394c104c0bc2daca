import type { Browser, BrowserContext } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { type RelyingParty, startRelyingParty } from '../../examples/relying-party.js'
import type { TestContext } from '../helpers/app.js'
import { BrowserSession } from '../helpers/browser-session.js'
import { closeBrowserTest, expectAccessible, fillLogIn, freeLoopbackUrl, startBrowserTest } from '../helpers/browser.js'
import { applicationForm, textById } from '../helpers/console.js'
import { buildOAuthTestApp } from '../integration/oauth/helpers.js'

/*
 * docs/openid-connect.md "Try it: the example relying party", in Chromium: examples/relying-party.ts, configured with nothing but
 * the issuer, a client ID and a secret from the console, signs a user in (discovery, code +
 * PKCE + nonce, ID Token, UserInfo) and out again through the end_session_endpoint
 * (RP-Initiated Logout 1.0): the Gatehouse session ends and the browser is back on the
 * example's home. Gatehouse's pages run without JavaScript, as everywhere else.
 */
let t: TestContext
let browser: Browser
let baseUrl: string
let rp: RelyingParty
const EMAIL = 'rp-browser@example.com'
const PASSWORD = 'correct horse battery'

/** Registers the example as a developer would in the console: its callback and its home as the post-logout URI. */
async function registerExample(rpUrl: string): Promise<{ clientId: string; clientSecret: string }> {
  const developer = await new BrowserSession(t.app).signUpAndLogIn('rp-developer@example.com', PASSWORD)
  await developer.get('/applications/new')
  const res = await developer.post('/applications', {
    ...applicationForm({ name: 'Example relying party', redirect_uris: `${rpUrl}/callback`, scopes: ['openid', 'email', 'profile'] }),
    post_logout_redirect_uris: `${rpUrl}/`,
  })
  expect(res.statusCode, res.body.slice(0, 500)).toBe(200)
  return { clientId: textById(res.body, 'client-id')!, clientSecret: textById(res.body, 'client-secret')! }
}

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildOAuthTestApp))
  const port = Number(new URL(await freeLoopbackUrl()).port)
  const { clientId, clientSecret } = await registerExample(`http://localhost:${port}`)
  await new BrowserSession(t.app).signUpAndLogIn(EMAIL, PASSWORD)
  rp = await startRelyingParty({ issuer: baseUrl, clientId, clientSecret, port })
})
afterAll(async () => {
  await rp?.close()
  await closeBrowserTest({ browser, t })
})

/** Whether the browser holds a Gatehouse session: /account answers the page (200), or sends it to log in. */
async function gatehouseAccount(context: BrowserContext): Promise<string> {
  const res = await context.request.get(`${baseUrl}/account`, { maxRedirects: 0 })
  return res.status() === 200 ? '200' : `${res.status()} ${res.headers().location ?? ''}`
}

it('signs a user in with Gatehouse, shows the claims, and signs out of both', async () => {
  const context = await browser.newContext({ javaScriptEnabled: false })
  // Under the test's own timeout, so a step that never comes names itself.
  context.setDefaultTimeout(20_000)
  const page = await context.newPage()

  await page.goto(`${rp.url}/`)
  await expectAccessible(page, 'the example home')
  await page.getByRole('link', { name: 'Sign in with Gatehouse' }).click()
  await page.waitForURL(/\/login\?next=/)
  await fillLogIn(page, EMAIL, PASSWORD)
  await page.waitForURL(/\/oauth\/authorize\?/)
  await page.getByRole('button', { name: 'Authorize' }).click()

  await page.waitForURL(`${rp.url}/`)
  expect(await page.locator('h1').textContent()).toBe('Signed in with Gatehouse')
  const user = await t.db.selectFrom('users').select('id').where('email', '=', EMAIL).executeTakeFirstOrThrow()
  const claim = (table: string, name: string) =>
    page
      .locator('table', { has: page.locator('caption', { hasText: table }) })
      .locator('tr', { has: page.locator(`th:text-is("${name}")`) })
      .locator('td')
  expect(await claim('ID Token', 'sub').textContent()).toBe(user.id)
  expect(await claim('ID Token', 'iss').textContent()).toBe(baseUrl)
  expect(await claim('UserInfo', 'sub').textContent()).toBe(user.id)
  expect(await claim('UserInfo', 'email').textContent()).toBe(EMAIL)
  expect(await claim('UserInfo', 'email_verified').textContent()).toBe('true')
  await expectAccessible(page, 'the claims page')
  expect(await gatehouseAccount(context)).toBe('200')

  // The ID Token hint names the browser's own Gatehouse session, so no confirmation page is
  // shown (RP-Initiated Logout 1.0, 2): straight back to the registered post-logout URI, with state.
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.waitForURL(new RegExp(`^${rp.url}/\\?state=[\\w-]+$`))
  expect(await page.getByRole('status').textContent()).toBe('You are signed out, here and at Gatehouse.')
  expect(await page.getByRole('link', { name: 'Sign in with Gatehouse' }).isVisible()).toBe(true)
  await expectAccessible(page, 'the example home after signing out')
  expect(await gatehouseAccount(context)).toMatch(/^303 \/login\b/)

  // Signing in again asks for the password: Gatehouse no longer knows this browser.
  await page.getByRole('link', { name: 'Sign in with Gatehouse' }).click()
  await page.waitForURL(/\/login\?next=/)
  await context.close()
}, 90_000)
