import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { axeViolations, closeBrowserTest, fillLogIn, startBrowserTest } from '../helpers/browser.js'
import type { TestContext } from '../helpers/app.js'
import { type TestClient, buildOAuthTestApp, createClient, exchange, grantAccess } from '../integration/oauth/helpers.js'

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
  ;({ t, baseUrl, browser } = await startBrowserTest(buildOAuthTestApp, { signUp: { email: EMAIL, password: PASSWORD } }))
  client = await createClient(t.db, {
    name: 'Browser Planner',
    redirectUris: ['https://client.example/cb'],
    scopes: ['openid', 'email', 'profile', 'read', 'write', 'write_teams'],
  })
})
afterAll(() => closeBrowserTest({ browser, t }))

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
    scope: 'openid email profile read write_teams',
    state,
    ...extra,
  })
  await page.goto(`${baseUrl}/oauth/authorize?${query}`)
  await page.waitForURL(/\/login\?next=/)
  await fillLogIn(page, EMAIL, PASSWORD)
  await page.waitForURL(/\/oauth\/authorize\?/)
  expect(await page.locator('h1').textContent()).toBe('Authorize Browser Planner')
  expect(await axeViolations(page)).toEqual([])
  expect(await page.getByText('Change team information').isVisible()).toBe(true)
  expect(await page.getByText('See your email address and whether it is verified').isVisible()).toBe(true)
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
  expect(res.json().scope).toBe('openid email profile read write_teams')
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

/*
 * Returning users (docs/oauth-endpoints.md "`GET /oauth/authorize`"): logged out, they start the flow again, log in, and
 * the log-in form's submission ends at the client through Gatehouse's redirects
 * (POST /login → 303 /oauth/authorize → 302 client). Chromium applies form-action to that
 * whole chain, so the log-in page must allow the client's origin.
 */
async function logIn(page: Page, email = EMAIL): Promise<void> {
  await page.waitForURL(/\/login\?(.*&)?next=/)
  await fillLogIn(page, email, PASSWORD)
}

it('a returning user with remembered consent logs in and lands at the client with a code', async () => {
  const returning = await createClient(t.db, { name: 'Returning Planner', redirectUris: ['https://client.example/cb'] })
  await grantAccess(t.db, EMAIL, returning.id, ['read', 'write_teams'])
  const page = await clientPage()
  const query = new URLSearchParams({ response_type: 'code', client_id: returning.clientId, scope: 'read write_teams', state: 'back-1' })
  await page.goto(`${baseUrl}/oauth/authorize?${query}`)
  await logIn(page)
  await page.waitForURL(/^https:\/\/client\.example\/cb\?/)
  const callback = new URL(page.url())
  expect(callback.searchParams.get('state')).toBe('back-1')
  const res = await exchange(t.app, returning, { code: callback.searchParams.get('code')!, redirect_uri: undefined })
  expect(res.statusCode, res.body).toBe(200)
})

it('a returning user of the token flow logs in, is asked again (the token flow always asks), and gets the token', async () => {
  const implicit = await createClient(t.db, { name: 'Implicit Planner', redirectUris: ['https://client.example/cb'], allowImplicit: true })
  await grantAccess(t.db, EMAIL, implicit.id, ['read'])
  const page = await clientPage()
  const query = new URLSearchParams({ response_type: 'token', client_id: implicit.clientId, state: 'back-2' })
  await page.goto(`${baseUrl}/oauth/authorize?${query}`)
  await logIn(page)
  await page.waitForURL(/\/oauth\/authorize\?/)
  await page.getByRole('button', { name: 'Authorize' }).click()
  await page.waitForURL(/^https:\/\/client\.example\/cb#/)
  const fragment = new URLSearchParams(new URL(page.url()).hash.slice(1))
  expect(fragment.get('access_token')).toMatch(/^gat_/)
  expect(fragment.get('state')).toBe('back-2')
})

it('a logged-out error: a page names the destination, and its link takes the error to the client', async () => {
  const page = await clientPage()
  const query = new URLSearchParams({ response_type: 'code', client_id: client.clientId, scope: 'admin', state: 'err-1' })
  await page.goto(`${baseUrl}/oauth/authorize?${query}`)
  expect(await page.locator('h1').textContent()).toBe('Authorization request refused')
  expect(await axeViolations(page)).toEqual([])
  await page.getByRole('link', { name: 'Return to client.example' }).click()
  await page.waitForURL(/^https:\/\/client\.example\/cb\?/)
  const callback = new URL(page.url())
  expect(callback.searchParams.get('error')).toBe('invalid_scope')
  expect(callback.searchParams.get('state')).toBe('err-1')
})

it('a new user takes the sign-up detour, logs in, consents and lands at the client', async () => {
  const page = await clientPage()
  const query = new URLSearchParams({ response_type: 'code', client_id: client.clientId, scope: 'read', state: 'new-1' })
  await page.goto(`${baseUrl}/oauth/authorize?${query}`)
  await page.waitForURL(/\/login\?next=/)
  await page.getByRole('link', { name: 'Sign up for free' }).click()
  await page.waitForURL(/\/signup\?next=/)
  const email = `detour-${Date.now()}@example.com`
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(PASSWORD)
  await page.getByRole('button', { name: 'Sign up' }).click()
  await logIn(page, email)
  await page.waitForURL(/\/oauth\/authorize\?/)
  await page.getByRole('button', { name: 'Authorize' }).click()
  await page.waitForURL(/^https:\/\/client\.example\/cb\?/)
  expect(new URL(page.url()).searchParams.get('state')).toBe('new-1')
})
