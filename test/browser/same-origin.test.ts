import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { buildTestApp, type TestContext } from '../helpers/app.js'
import { closeBrowserTest, logInThroughPage, startBrowserTest } from '../helpers/browser.js'

/*
 * The same-origin rule (src/http/page-security.ts) with the headers Chromium really sends: its own
 * forms pass (which needs Referrer-Policy same-origin: under no-referrer Chromium sends
 * `Origin: null`), and a form on another site is refused with the error page.
 */
let t: TestContext
let browser: Browser
let baseUrl: string
const EMAIL = 'same-origin-browser@example.com'
const PASSWORD = 'correct horse battery'

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildTestApp, { signUp: { email: EMAIL, password: PASSWORD } }))
})
afterAll(() => closeBrowserTest({ browser, t }))

it('accepts its own log-in form and refuses the same form posted from another site', async () => {
  const context = await browser.newContext({ javaScriptEnabled: false })
  const page = await context.newPage()
  await page.goto(`${baseUrl}/login`)
  const token = await page.locator('input[name="_csrf"]').first().getAttribute('value')

  // Another site's page with a copy of the form, the browser's own CSRF token and all.
  await context.route('http://evil.example/**', (route) =>
    route.fulfill({
      status: 200,
      contentType: 'text/html',
      body: `<form method="post" action="${baseUrl}/login">
        <input type="hidden" name="_csrf" value="${token}">
        <input type="hidden" name="email" value="${EMAIL}">
        <input type="hidden" name="password" value="${PASSWORD}">
        <button>Win a prize</button></form>`,
    }),
  )
  await page.goto('http://evil.example/')
  const [refused] = await Promise.all([page.waitForResponse(`${baseUrl}/login`), page.getByRole('button', { name: 'Win a prize' }).click()])
  expect(refused.status()).toBe(403)
  expect(await page.locator('.error-message').textContent()).toContain('This form was sent from another site')
  expect((await context.cookies(baseUrl)).map((c) => c.name)).not.toContain('gatehouse_session')

  await logInThroughPage(page, baseUrl, EMAIL, PASSWORD)
  await page.waitForURL(`${baseUrl}/applications`)
  expect((await context.cookies(baseUrl)).map((c) => c.name)).toContain('gatehouse_session')
  await context.close()
})
