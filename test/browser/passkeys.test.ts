import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { buildTestApp, type TestContext } from '../helpers/app.js'
import { linkTo } from '../helpers/mailbox.js'
import {
  closeBrowserTest,
  expectAccessible,
  logInThroughPage,
  signUpAndLogInThroughPage,
  startBrowserTest,
  tabTo,
} from '../helpers/browser.js'

/*
 * Passkeys in Chromium (docs/accounts.md "Passkeys"), with the DevTools protocol's virtual authenticator (a
 * platform authenticator that keeps discoverable credentials and verifies its user): add a
 * passkey on /account/passkeys, log out, sign in with it and no password, remove it, with the
 * keyboard alone where the passkey pages are concerned. axe-core
 * checks both passkey pages. PUBLIC_URL is http://localhost:<port>: an RP ID is a domain, never
 * an IP address, and localhost is a secure context, where WebAuthn is available.
 */

/** Opens the verification link mailed to `email` in the logged-in page and confirms it: factors need a verified address. */
async function verifyThroughPage(page: Page, email: string): Promise<void> {
  await page.goto(`${baseUrl}${linkTo(t.mailbox.last(email), '/verify-email')}`)
  await page.getByRole('button', { name: 'Verify my email address' }).click()
  await page.waitForURL(`${baseUrl}/applications?verified=1`)
}

let t: TestContext
let browser: Browser
let baseUrl: string
const EMAIL = 'keyholder@example.com'
const PASSWORD = 'keyholder walk password'

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildTestApp, { hostname: 'localhost' }))
})
afterAll(() => closeBrowserTest({ browser, t }))

async function withAuthenticator(context: BrowserContext, page: Page) {
  const cdp = await context.newCDPSession(page)
  await cdp.send('WebAuthn.enable')
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
  })
  return { cdp, authenticatorId }
}

async function logOut(page: Page): Promise<void> {
  await page.locator('details.user-menu summary').click()
  await page.getByRole('button', { name: 'Log out' }).click()
  await page.waitForLoadState()
}

it('without JavaScript the passkey forms stay hidden and say they need it; the password form logs in', async () => {
  const context = await browser.newContext({ javaScriptEnabled: false })
  const page = await context.newPage()
  await page.goto(`${baseUrl}/signup`)
  await page.getByLabel('Email').fill('nojs@example.com')
  await page.getByLabel('Password').fill(PASSWORD)
  await page.getByRole('button', { name: 'Sign up' }).click()
  await page.waitForURL(/\/login\?signed_up=1/)
  expect(await page.getByText('Signing in with a passkey needs JavaScript').isVisible()).toBe(true)
  expect(await page.getByRole('button', { name: 'Sign in with a passkey' }).isVisible()).toBe(false)
  await expectAccessible(page, 'log-in without JavaScript')
  await page.getByLabel('Password').fill(PASSWORD)
  await page.getByRole('button', { name: 'Log in', exact: true }).click()
  await page.waitForURL(`${baseUrl}/applications`)
  await verifyThroughPage(page, 'nojs@example.com')
  await page.goto(`${baseUrl}/account/passkeys`)
  expect(await page.getByText('Adding a passkey needs JavaScript').isVisible()).toBe(true)
  expect(await page.getByRole('button', { name: 'Add a passkey' }).isVisible()).toBe(false)
  await expectAccessible(page, 'passkeys without JavaScript')
  await context.close()
})

it('add a passkey → log out → sign in with it, no password → remove it', async () => {
  const context = await browser.newContext()
  const page = await context.newPage()
  const scriptErrors: string[] = []
  page.on('pageerror', (e) => scriptErrors.push(e.message))
  page.on('console', (m) => {
    if (m.type() === 'error') scriptErrors.push(m.text())
  })
  const { cdp, authenticatorId } = await withAuthenticator(context, page)

  await signUpAndLogInThroughPage(page, baseUrl, EMAIL, PASSWORD)
  await page.waitForURL(`${baseUrl}/applications`)
  await verifyThroughPage(page, EMAIL)

  await page.goto(`${baseUrl}/account`)
  await page.getByRole('link', { name: 'Passkeys' }).click()
  await page.waitForURL(`${baseUrl}/account/passkeys`)
  expect(await page.getByText('Adding a passkey needs JavaScript').isVisible()).toBe(false)
  await expectAccessible(page, 'passkeys, none yet')
  // With the keyboard alone: the name, then Enter submits the form to the script.
  await tabTo(page, '#passkey-name')
  await page.keyboard.type('Virtual key')
  // Adding a factor asks for the password on the same form (docs/accounts.md "Passkeys").
  await tabTo(page, '#passkey-password')
  await page.keyboard.type(PASSWORD)
  await page.keyboard.press('Enter')
  await page.waitForURL(`${baseUrl}/account/passkeys?added=1`)
  expect(await page.getByRole('heading', { name: 'Virtual key' }).isVisible()).toBe(true)
  await expectAccessible(page, 'passkeys, one added')
  const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId })
  expect(credentials).toHaveLength(1)
  expect(credentials[0]!.isResidentCredential).toBe(true)

  await logOut(page)
  await page.goto(`${baseUrl}/login?next=%2Faccount%2Fpasskeys`)
  await expectAccessible(page, 'log-in with JavaScript')
  await tabTo(page, 'form[data-passkey="sign-in"] button')
  await page.keyboard.press('Enter')
  await page.waitForURL(`${baseUrl}/account/passkeys`)
  expect(await page.getByText(/Last used: \d{4}-\d{2}-\d{2}/).isVisible()).toBe(true)
  const user = await t.db.selectFrom('users').select('id').where('email', '=', EMAIL).executeTakeFirstOrThrow()
  const sessions = await t.db.selectFrom('sessions').select('amr').where('user_id', '=', user.id).execute()
  expect(sessions.map((s) => s.amr)).toEqual([['hwk', 'mfa']])

  await tabTo(page, '#password-0')
  await page.keyboard.type(PASSWORD)
  await page.keyboard.press('Enter')
  await page.waitForURL(`${baseUrl}/account/passkeys?removed=1`)
  expect(await page.getByText('Your account has no passkey yet.').isVisible()).toBe(true)
  await expectAccessible(page, 'passkeys, removed')

  // The authenticator still holds the credential; the server no longer knows it.
  await logOut(page)
  await page.goto(`${baseUrl}/login`)
  await page.getByRole('button', { name: 'Sign in with a passkey' }).click()
  await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/not registered here/)
  expect(page.url()).toBe(`${baseUrl}/login`)
  await expectAccessible(page, 'log-in, passkey refused')
  expect(scriptErrors.filter((e) => !/status of 400/.test(e))).toEqual([])
  await context.close()
})

it("a passkey as the second step of a password log-in: offered on the step's page, and the session records pwd, hwk, mfa", async () => {
  const email = 'second-step@example.com'
  const context = await browser.newContext()
  const page = await context.newPage()
  await withAuthenticator(context, page)
  await signUpAndLogInThroughPage(page, baseUrl, email, PASSWORD)
  await page.waitForURL(`${baseUrl}/applications`)
  await verifyThroughPage(page, email)
  await page.goto(`${baseUrl}/account/passkeys`)
  await page.getByLabel('Name').fill('Second step key')
  await page.getByLabel('Your password').fill(PASSWORD)
  await page.getByRole('button', { name: 'Add a passkey' }).click()
  await page.waitForURL(`${baseUrl}/account/passkeys?added=1`)

  await logOut(page)
  await logInThroughPage(page, baseUrl, email, PASSWORD)
  await page.waitForURL(`${baseUrl}/login/second-factor`)
  // The account has a passkey and no authenticator app: the step offers the passkey alone.
  expect(await page.getByLabel('Authentication code').count()).toBe(0)
  await expectAccessible(page, 'second step, a passkey')
  await page.getByRole('button', { name: 'Use a passkey' }).click()
  await page.waitForURL(`${baseUrl}/applications`)
  const user = await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()
  const sessions = await t.db.selectFrom('sessions').select('amr').where('user_id', '=', user.id).execute()
  expect(sessions.map((s) => s.amr)).toEqual([['pwd', 'hwk', 'mfa']])
  await context.close()
})
