import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { closeBrowserTest, expectAccessible, fillLogIn, startBrowserTest, tabTo } from '../helpers/browser.js'
import type { TestContext } from '../helpers/app.js'
import { type TestClient, buildOAuthTestApp, createClient } from '../integration/oauth/helpers.js'

/*
 * The device flow's page (RFC 8628 3.3) in Chromium without JavaScript, by keyboard only: the link
 * a device shows (verification_uri_complete) leads through log-in back to the page with the code
 * filled in, the consent page names the application and warns, and Authorize ends on the page
 * that sends the user back to the device. Every page passes axe; the device then gets its token.
 */
let t: TestContext
let browser: Browser
let baseUrl: string
let client: TestClient
const EMAIL = 'device-browser@example.com'
const PASSWORD = 'correct horse battery'
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildOAuthTestApp, { signUp: { email: EMAIL, password: PASSWORD } }))
  client = await createClient(t.db, { name: 'Living Room TV', scopes: ['read', 'write_teams'] })
  await t.db.updateTable('applications').set({ allow_device_flow: true }).where('id', '=', client.id).execute()
})
afterAll(() => closeBrowserTest({ browser, t }))

async function devicePost(url: string, params: Record<string, string>) {
  const payload = new URLSearchParams({ client_id: client.clientId, client_secret: client.clientSecret, ...params }).toString()
  return t.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload })
}

it('connects a device by keyboard, without JavaScript, through accessible pages', async () => {
  const started = (await devicePost('/oauth/device_authorization', { scope: 'read write_teams' })).json() as {
    device_code: string
    user_code: string
    verification_uri_complete: string
  }
  const page = await (await browser.newContext({ javaScriptEnabled: false })).newPage()
  await page.goto(started.verification_uri_complete.replace(/^https?:\/\/[^/]+/, baseUrl))
  await page.waitForURL(/\/login\?next=/)
  await fillLogIn(page, EMAIL, PASSWORD)
  await page.waitForURL(/\/device\?user_code=/)
  await expectAccessible(page, 'the code page')
  expect(await page.getByLabel('Code').inputValue()).toBe(started.user_code)

  await tabTo(page, 'button[type="submit"]')
  await page.keyboard.press('Enter')
  await page.waitForSelector('#device-warning')
  expect(await page.locator('h1').textContent()).toBe('Authorize Living Room TV')
  expect(await page.getByText('Change team information').isVisible()).toBe(true)
  await expectAccessible(page, 'the consent page')

  await tabTo(page, 'button[value="approve"]')
  await page.keyboard.press('Enter')
  await page.waitForSelector('h1:text("Device connected")')
  await expectAccessible(page, 'the done page')

  const token = await devicePost('/oauth/token', { grant_type: DEVICE_GRANT, device_code: started.device_code })
  expect(token.statusCode, token.body).toBe(200)
  expect(token.json()).toMatchObject({ token_type: 'Bearer', scope: 'read write_teams' })
})

it('shows a wrong code accessibly, the field marked', async () => {
  const page = await (await browser.newContext({ javaScriptEnabled: false })).newPage()
  await page.goto(`${baseUrl}/device`)
  await page.waitForURL(/\/login\?next=/)
  await fillLogIn(page, EMAIL, PASSWORD)
  await page.waitForURL(/\/device$/)
  await page.getByLabel('Code').fill('bcdf ghjk')
  await page.getByRole('button', { name: 'Continue' }).click()
  await page.waitForSelector('#user_code-error')
  expect(await page.getByLabel('Code').getAttribute('aria-invalid')).toBe('true')
  await expectAccessible(page, 'a wrong code')
})
