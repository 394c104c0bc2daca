import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { closeBrowserTest, expectAccessible, fillLogIn, startBrowserTest } from '../helpers/browser.js'
import type { TestContext } from '../helpers/app.js'
import { type TestClient, buildOAuthTestApp, createClient, exchange, grantAccess } from '../integration/oauth/helpers.js'

/*
 * response_mode=form_post in Chromium (OAuth 2.0 Form Post Response Mode, docs/oauth-endpoints.md "Response modes (`response_mode`)"): with
 * JavaScript the page's one script, allowed by its CSP hash, posts the form at once; without it
 * the button does. Either way the client receives code, state and iss in a POST body, which
 * proves the page's CSP form-action lets the form reach the client.
 */
let t: TestContext
let browser: Browser
let baseUrl: string
let client: TestClient
const EMAIL = 'form-post-browser@example.com'
const PASSWORD = 'correct horse battery'

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildOAuthTestApp, { signUp: { email: EMAIL, password: PASSWORD } }))
  client = await createClient(t.db, { name: 'Form Post Planner', redirectUris: ['https://client.example/cb'] })
  await grantAccess(t.db, EMAIL, client.id)
})
afterAll(() => closeBrowserTest({ browser, t }))

/** A page whose posts to the client are answered locally; `posted` resolves to the first body. */
async function clientPage(javaScriptEnabled: boolean): Promise<{ page: Page; posted: Promise<URLSearchParams>; errors: string[] }> {
  const context = await browser.newContext({ javaScriptEnabled })
  let received: (body: URLSearchParams) => void = () => {}
  const posted = new Promise<URLSearchParams>((resolve) => (received = resolve))
  await context.route('https://client.example/**', async (route) => {
    if (route.request().method() === 'POST') received(new URLSearchParams(route.request().postData() ?? ''))
    await route.fulfill({ status: 200, contentType: 'text/html', body: '<p>client</p>' })
  })
  const page = await context.newPage()
  const errors: string[] = []
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text())
  })
  return { page, posted, errors }
}

async function logInAndAuthorize(page: Page, state: string): Promise<void> {
  const query = new URLSearchParams({ response_type: 'code', client_id: client.clientId, scope: 'read', state, response_mode: 'form_post' })
  await page.goto(`${baseUrl}/oauth/authorize?${query}`)
  await page.waitForURL(/\/login\?next=/)
  await fillLogIn(page, EMAIL, PASSWORD)
}

async function expectCode(posted: URLSearchParams, state: string): Promise<void> {
  expect(posted.get('state')).toBe(state)
  expect(posted.get('iss')).toBe(t.config.publicUrl)
  const res = await exchange(t.app, client, { code: posted.get('code')! })
  expect(res.statusCode, res.body).toBe(200)
}

it('without JavaScript: an axe-clean page whose button posts the response', async () => {
  const { page, posted } = await clientPage(false)
  await logInAndAuthorize(page, 'no-js')
  await page.waitForURL(/\/oauth\/authorize\?/)
  expect(await page.locator('h1').textContent()).toBe('Returning to the application')
  // expectAccessible checks a copy of the page with scripts on, where this one would post the form
  // away: the copy is taken without it (the script has no effect on what axe reads).
  await page.locator('main script').evaluate((script) => script.remove())
  await expectAccessible(page, 'the form_post page')
  await page.getByRole('button', { name: 'Continue to client.example' }).click()
  await expectCode(await posted, 'no-js')
})

it('with JavaScript: the hashed script posts the form on its own, with no CSP violation', async () => {
  const { page, posted, errors } = await clientPage(true)
  await logInAndAuthorize(page, 'js')
  await expectCode(await posted, 'js')
  expect(errors.filter((e) => /Content Security Policy/i.test(e))).toEqual([])
})
