import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { BrowserSession } from '../helpers/browser-session.js'
import { launchBrowser, listenOnLoopback } from '../helpers/browser.js'
import type { TestContext } from '../helpers/app.js'
import { type TestClient, buildOAuthTestApp, createClient, exchange } from '../integration/oauth/helpers.js'

/*
 * The consent page in Chromium without JavaScript: log in from the authorize request, answer
 * Authorize or Deny, land on the client's redirect URI. This also proves the consent page's
 * CSP form-action lets the 303 reach the client (Chromium enforces it on redirects).
 */
let t: TestContext
let browser: Browser
let baseUrl: string
let client: TestClient
const EMAIL = 'consent-browser@example.com'
const PASSWORD = 'correct horse battery'

beforeAll(async () => {
  ;({ t, baseUrl } = await listenOnLoopback(buildOAuthTestApp))
  browser = await launchBrowser()
  client = await createClient(t.db, { name: 'Browser Planner', redirectUris: ['https://client.example/cb'] })
  await new BrowserSession(t.app).signUpAndLogIn(EMAIL, PASSWORD)
})
afterAll(async () => {
  await browser?.close()
  await t?.close()
})

/** A page whose requests to the client are answered locally, so the callback URL can be read. */
async function clientPage(): Promise<Page> {
  const context = await browser.newContext({ javaScriptEnabled: false })
  await context.route('https://client.example/**', (route) =>
    route.fulfill({ status: 200, contentType: 'text/html', body: '<p>client</p>' }),
  )
  return context.newPage()
}

async function reachConsent(page: Page, state: string, extra: Record<string, string> = {}): Promise<void> {
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: client.clientId,
    redirect_uri: client.redirectUri,
    scope: 'read write_teams',
    state,
    ...extra,
  })
  await page.goto(`${baseUrl}/oauth/authorize?${query}`)
  await page.waitForURL(/\/login\?next=/)
  await page.getByLabel('Email').fill(EMAIL)
  await page.getByLabel('Password').fill(PASSWORD)
  await page.getByRole('button', { name: 'Log in' }).click()
  await page.waitForURL(/\/oauth\/authorize\?/)
  expect(await page.locator('h1').textContent()).toBe('Authorize Browser Planner')
  expect(await page.getByText('Change team information').isVisible()).toBe(true)
}

it('approves in the browser and the code exchanges', async () => {
  const page = await clientPage()
  await reachConsent(page, 'approve-1')
  await page.getByRole('button', { name: 'Authorize' }).click()
  await page.waitForURL(/^https:\/\/client\.example\/cb\?/)
  const callback = new URL(page.url())
  expect(callback.searchParams.get('state')).toBe('approve-1')
  const res = await exchange(t.app, client, { code: callback.searchParams.get('code')! })
  expect(res.statusCode, res.body).toBe(200)
  expect(res.json().scope).toBe('read write_teams')
})

it('denies in the browser', async () => {
  const page = await clientPage()
  // The first test's consent is remembered; prompt=consent asks again.
  await reachConsent(page, 'deny-1', { prompt: 'consent' })
  await page.getByRole('button', { name: 'Deny' }).click()
  await page.waitForURL(/^https:\/\/client\.example\/cb\?/)
  const callback = new URL(page.url())
  expect(callback.searchParams.get('error')).toBe('access_denied')
  expect(callback.searchParams.get('state')).toBe('deny-1')
  expect(callback.searchParams.get('code')).toBeNull()
})
