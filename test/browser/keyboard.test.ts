import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { TestContext } from '../helpers/app.js'
import { axeViolations, closeBrowserTest, startBrowserTest, tabTo } from '../helpers/browser.js'
import { BrowserSession } from '../helpers/browser-session.js'
import { createApplicationViaConsole } from '../helpers/console.js'
import { buildOAuthTestApp, createClient } from '../integration/oauth/helpers.js'

/*
 * Keyboard alone (WCAG 2.1.1): a new user, sent to Gatehouse by an application, signs up, logs in
 * and consents with Tab, typing and Enter only; no mouse, no click. Then the console pages not
 * walked elsewhere, checked with axe in their states.
 */

let t: TestContext
let browser: Browser
let baseUrl: string

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildOAuthTestApp))
})
afterAll(() => closeBrowserTest({ browser, t }))

it('signs up, logs in and consents with the keyboard only', async () => {
  const client = await createClient(t.db, { name: 'Keyboard Planner', redirectUris: ['https://client.example/cb'] })
  const context = await browser.newContext({ javaScriptEnabled: false })
  await context.route('https://client.example/**', (route) =>
    route.fulfill({ status: 200, contentType: 'text/html', body: '<p>client</p>' }),
  )
  const page = await context.newPage()
  const query = new URLSearchParams({ response_type: 'code', client_id: client.clientId, scope: 'read', state: 'keys-1' })
  await page.goto(`${baseUrl}/oauth/authorize?${query}`)
  await page.waitForURL(/\/login\?next=/)

  await tabTo(page, 'a[href^="/signup?next="]')
  await page.keyboard.press('Enter')
  await page.waitForURL(/\/signup\?next=/)
  await tabTo(page, '#email')
  await page.keyboard.type('keys@example.com')
  await tabTo(page, '#password')
  await page.keyboard.type('typed with keys only')
  await page.keyboard.press('Enter')
  await page.waitForURL(/\/login\?signed_up=1/)

  // The email is filled in already; the password is next.
  await tabTo(page, '#password')
  await page.keyboard.type('typed with keys only')
  await page.keyboard.press('Enter')
  await page.waitForURL(/\/oauth\/authorize\?/)
  expect(await page.locator('h1').textContent()).toBe('Authorize Keyboard Planner')

  await tabTo(page, 'button[value="approve"]')
  // The browser is sent on to the client's redirect URI: that request is what counts.
  const [toClient] = await Promise.all([
    page.waitForRequest((r) => r.url().startsWith('https://client.example/cb?')),
    page.keyboard.press('Enter'),
  ])
  const callback = new URL(toClient.url())
  expect(callback.searchParams.get('state')).toBe('keys-1')
  expect(callback.searchParams.get('code')).toMatch(/^gac_/)
  await context.close()
})

it('the user menu opens and its entries are reached with the keyboard', async () => {
  const s = await new BrowserSession(t.app).signUpAndLogIn('menu-keys@example.com', 'typed with keys only')
  const context = await browser.newContext({ javaScriptEnabled: false })
  await context.addCookies([...s.cookies].map(([name, value]) => ({ name, value, url: baseUrl })))
  const page = await context.newPage()
  await page.goto(`${baseUrl}/applications`)
  await tabTo(page, 'details.user-menu > summary')
  await page.keyboard.press('Enter')
  await tabTo(page, 'a[href="/account"]')
  await page.keyboard.press('Enter')
  await page.waitForURL(`${baseUrl}/account`)
  expect(await page.locator('h1').textContent()).toBe('Account')
  await context.close()
})

it('the console pages not walked elsewhere have no WCAG 2.1 A/AA violation', async () => {
  const s = await new BrowserSession(t.app).signUpAndLogIn('console-axe@example.com', 'typed with keys only')
  const app = await createApplicationViaConsole(s, { name: 'Axe Planner' })
  const context = await browser.newContext({ javaScriptEnabled: false })
  await context.addCookies([...s.cookies].map(([name, value]) => ({ name, value, url: baseUrl })))
  const page = await context.newPage()
  for (const path of ['/applications', `/applications/${app.id}`, `/applications/${app.id}/secret`, `/applications/${app.id}/delete`]) {
    await page.goto(`${baseUrl}${path}`)
    expect(await axeViolations(page), path).toEqual([])
  }
  await page.goto(`${baseUrl}/applications/${app.id}/edit`)
  expect(await axeViolations(page), 'edit, empty').toEqual([])
  await page.getByLabel('Application name').fill('')
  await page.getByRole('textbox', { name: /^Redirect URIs/ }).fill('javascript:alert(1)')
  // Empty name: the browser's own check would stop the form; the server's answer is what is tested.
  await page.locator('#name').evaluate((el) => el.removeAttribute('required'))
  await page.getByRole('button', { name: 'Save changes' }).click()
  await page.waitForLoadState()
  expect(await page.locator('.field-error').count()).toBeGreaterThan(0)
  expect(await axeViolations(page), 'edit, with errors').toEqual([])
  await context.close()
}, 60_000)
