import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { buildTestApp, type TestContext } from '../helpers/app.js'
import { closeBrowserTest, expectAccessible, logInThroughPage, startBrowserTest, tabTo } from '../helpers/browser.js'
import { STEP_MS, totpCode } from '../helpers/totp.js'

/*
 * Two-factor authentication in Chromium without JavaScript (docs/accounts.md "Two-factor authentication"): set up an authenticator
 * app from the Account page (QR code and secret, a wrong code, the right one, the recovery codes),
 * log out, log in with the password and then the app's code; axe-core's WCAG 2.1 A/AA check on
 * every page in every state it passes through.
 */

let t: TestContext
let browser: Browser
let baseUrl: string
const EMAIL = 'second-factor@example.com'
const PASSWORD = 'second factor walk'
/** The secret the first walk enrolled; the keyboard walk logs in with it. */
let enrolledSecret = ''

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildTestApp, { signUp: { email: EMAIL, password: PASSWORD } }))
})
afterAll(() => closeBrowserTest({ browser, t }))

it('set up an authenticator app, log out, log in with the password and a code', async () => {
  const context = await browser.newContext({ javaScriptEnabled: false })
  const page = await context.newPage()
  await logInThroughPage(page, baseUrl, EMAIL, PASSWORD)
  await page.waitForURL(`${baseUrl}/applications`)

  await page.goto(`${baseUrl}/account`)
  await page.getByRole('link', { name: 'Two-factor authentication' }).click()
  await expectAccessible(page, 'two-factor, off')
  await page.getByRole('button', { name: 'Set up an authenticator app' }).click()
  await page.waitForURL(`${baseUrl}/account/two-factor/totp`)
  expect(await page.getByRole('img', { name: /QR code/ }).isVisible()).toBe(true)
  await expectAccessible(page, 'set-up')
  const secret = ((await page.locator('code.secret').textContent()) ?? '').replace(/\s/g, '')
  enrolledSecret = secret

  await page.getByLabel('Code from the app').fill(totpCode(secret, new Date(t.clock().getTime() + 4 * STEP_MS)))
  await page.getByLabel('Your password').fill(PASSWORD)
  await page.getByRole('button', { name: 'Turn on' }).click()
  expect(await page.getByRole('alert').textContent()).toContain('That code is not right')
  await expectAccessible(page, 'set-up, wrong code')
  await page.getByLabel('Code from the app').fill(totpCode(secret, t.clock()))
  await page.getByLabel('Your password').fill(PASSWORD)
  await page.getByRole('button', { name: 'Turn on' }).click()
  await page.getByRole('heading', { name: 'Your recovery codes' }).waitFor()
  expect(await page.locator('.recovery-codes li').count()).toBe(10)
  await expectAccessible(page, 'recovery codes')
  await page.getByRole('link', { name: 'I have saved them' }).click()
  expect(await page.getByText('10 of 10 left').isVisible()).toBe(true)
  await expectAccessible(page, 'two-factor, on')

  await page.locator('details.user-menu > summary').click()
  await page.getByRole('button', { name: 'Log out' }).click()
  await page.waitForURL(`${baseUrl}/login`)
  t.clock.advance(STEP_MS)
  await logInThroughPage(page, baseUrl, EMAIL, PASSWORD)
  await page.waitForURL(`${baseUrl}/login/second-factor`)
  await expectAccessible(page, 'second step')
  await page.getByLabel('Authentication code').fill('000000')
  await page.getByRole('button', { name: 'Log in', exact: true }).click()
  expect(await page.getByRole('alert').textContent()).toContain('That code is not right')
  await expectAccessible(page, 'second step, wrong code')
  await page.getByText('Use a recovery code instead').click()
  expect(await page.getByLabel('Recovery code').isVisible()).toBe(true)
  await expectAccessible(page, 'second step, recovery code open')
  await page.getByLabel('Authentication code').fill(totpCode(secret, t.clock()))
  await page.getByRole('button', { name: 'Log in', exact: true }).click()
  await page.waitForURL(`${baseUrl}/applications`)
  await context.close()
}, 90_000)

it('the second step with the keyboard alone (WCAG 2.1.1): the recovery-code disclosure opens, the code logs in', async () => {
  expect(enrolledSecret).not.toBe('')
  t.clock.advance(STEP_MS)
  const context = await browser.newContext({ javaScriptEnabled: false })
  const page = await context.newPage()
  await page.goto(`${baseUrl}/login`)
  await tabTo(page, '#email')
  await page.keyboard.type(EMAIL)
  await tabTo(page, '#password')
  await page.keyboard.type(PASSWORD)
  await page.keyboard.press('Enter')
  await page.waitForURL(`${baseUrl}/login/second-factor`)
  await tabTo(page, 'details > summary')
  await page.keyboard.press('Enter')
  expect(await page.getByLabel('Recovery code').isVisible()).toBe(true)
  await page.keyboard.press('Shift+Tab')
  await tabTo(page, '#code')
  await page.keyboard.type(totpCode(enrolledSecret, t.clock()))
  await page.keyboard.press('Enter')
  await page.waitForURL(`${baseUrl}/applications`)
  await context.close()
}, 60_000)
