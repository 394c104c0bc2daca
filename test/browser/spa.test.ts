import type { Browser, BrowserContext } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { type SpaExample, startSpaExample } from '../../examples/spa/server.js'
import type { TestContext } from '../helpers/app.js'
import { BrowserSession } from '../helpers/browser-session.js'
import { closeBrowserTest, expectAccessible, fillLogIn, freeLoopbackUrl, logInThroughPage, startBrowserTest } from '../helpers/browser.js'
import { applicationForm, textById } from '../helpers/console.js'
import { buildOAuthTestApp } from '../integration/oauth/helpers.js'

/*
 * The example single-page app (examples/spa/, docs/applications.md "Which kind of application?")
 * in Chromium: oidc-client-ts, unmodified, signs a user in from the browser alone as a public
 * client (code + PKCE S256, the exchange by client_id from the app's origin, allowed by CORS),
 * the page calls UserInfo with the access token, and signs out through the end_session_endpoint.
 */
let t: TestContext
let browser: Browser
let baseUrl: string
let spa: SpaExample
let clientId: string
const EMAIL = 'spa-browser@example.com'
const PASSWORD = 'correct horse battery'

/** Registers the example as a developer would: a single-page app, whose page shows no secret. */
async function registerExample(spaUrl: string): Promise<string> {
  const developer = await new BrowserSession(t.app).signUpAndLogIn('spa-developer@example.com', PASSWORD)
  await developer.get('/applications/new')
  const res = await developer.post('/applications', {
    ...applicationForm({
      kind: 'spa',
      name: 'Example single-page app',
      redirect_uris: `${spaUrl}/`,
      scopes: ['openid', 'email', 'profile'],
    }),
    post_logout_redirect_uris: `${spaUrl}/`,
  })
  expect(res.statusCode, res.body.slice(0, 500)).toBe(200)
  expect(textById(res.body, 'client-secret')).toBeUndefined()
  return textById(res.body, 'client-id')!
}

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildOAuthTestApp))
  const port = Number(new URL(await freeLoopbackUrl()).port)
  clientId = await registerExample(`http://localhost:${port}`)
  await new BrowserSession(t.app).signUpAndLogIn(EMAIL, PASSWORD)
  spa = await startSpaExample({ issuer: baseUrl, clientId, port })
})
afterAll(async () => {
  await spa?.close()
  await closeBrowserTest({ browser, t })
})

async function gatehouseAccount(context: BrowserContext): Promise<string> {
  const res = await context.request.get(`${baseUrl}/account`, { maxRedirects: 0 })
  return res.status() === 200 ? '200' : `${res.status()} ${res.headers().location ?? ''}`
}

it('signs a user in with oidc-client-ts from the browser, reads UserInfo, and signs out', async () => {
  const context = await browser.newContext()
  context.setDefaultTimeout(20_000)
  const page = await context.newPage()
  const tokenCalls: Array<{ allowed: string | undefined; status: number }> = []
  page.on('response', (response) => {
    if (new URL(response.url()).pathname !== '/oauth/token') return
    tokenCalls.push({ allowed: response.headers()['access-control-allow-origin'], status: response.status() })
  })

  await page.goto(`${spa.url}/`)
  await page.getByRole('status').filter({ hasText: 'You are not signed in.' }).waitFor()
  await expectAccessible(page, 'the single-page app, signed out')
  await page.getByRole('button', { name: 'Sign in with Gatehouse' }).click()
  await page.waitForURL(/\/login\?next=/)
  await fillLogIn(page, EMAIL, PASSWORD)
  await page.waitForURL(/\/oauth\/authorize\?/)
  await page.getByRole('button', { name: 'Authorize' }).click()

  await page.getByRole('status').filter({ hasText: 'Signed in with Gatehouse.' }).waitFor()
  expect(page.url()).toBe(`${spa.url}/`)
  const user = await t.db.selectFrom('users').select('id').where('email', '=', EMAIL).executeTakeFirstOrThrow()
  const claim = (name: string) => page.locator('tr', { has: page.locator(`th:text-is("${name}")`) }).locator('td')
  expect(await claim('sub').textContent()).toBe(user.id)
  expect(await claim('email').textContent()).toBe(EMAIL)
  // The exchange came from the app's origin and was let through by name, never by `*`.
  expect(tokenCalls).toEqual([{ allowed: spa.url, status: 200 }])
  const token = await t.db
    .selectFrom('access_tokens')
    .innerJoin('applications', 'applications.id', 'access_tokens.application_id')
    .select(['applications.client_id', 'access_tokens.revoked_at'])
    .where('access_tokens.user_id', '=', user.id)
    .executeTakeFirstOrThrow()
  expect(token).toEqual({ client_id: clientId, revoked_at: null })
  await expectAccessible(page, 'the single-page app, signed in')
  expect(await gatehouseAccount(context)).toBe('200')

  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.getByRole('status').filter({ hasText: 'You are not signed in.' }).waitFor()
  expect(page.url()).toBe(`${spa.url}/`)
  expect(await gatehouseAccount(context)).toMatch(/^303 \/login\b/)
  await context.close()
}, 90_000)

it('lets the owner pick the kind at registration and change it later, on accessible pages that need no JavaScript', async () => {
  const context = await browser.newContext({ javaScriptEnabled: false })
  context.setDefaultTimeout(20_000)
  const page = await context.newPage()
  await logInThroughPage(page, baseUrl, 'spa-developer@example.com', PASSWORD)
  await page.waitForURL(/\/applications$/)
  await page.goto(`${baseUrl}/applications/new`)
  await expectAccessible(page, 'the registration form with the kinds')
  await page.getByLabel('Native app').check()
  await page.getByLabel('Application name').fill('Example native app')
  await page.getByLabel(/^Redirect URIs/).fill('com.example.native:/callback')
  await page.getByRole('button', { name: 'Register application' }).click()
  await page.getByRole('heading', { name: 'Example native app' }).waitFor()
  expect(await page.locator('#client-secret').count()).toBe(0)
  await expectAccessible(page, 'a native app, which has no secret')

  await page.getByRole('link', { name: 'Change the kind' }).click()
  await page.waitForURL(/\/kind$/)
  await expectAccessible(page, 'the change of kind')
  await page.getByLabel('Web application').check()
  await page.getByRole('button', { name: 'Change the kind' }).click()
  await page.getByText('Kind changed to web application.').waitFor()
  expect(await page.locator('#client-secret').textContent()).toMatch(/\S{20,}/)
  await context.close()
}, 90_000)
