import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { closeBrowserTest, expectAccessible, logInThroughPage, startBrowserTest } from '../helpers/browser.js'
import type { TestContext } from '../helpers/app.js'
import { type TestClient, buildOAuthTestApp, createClient, grantAccess } from '../integration/oauth/helpers.js'

/*
 * The end_session_endpoint's pages in Chromium (OpenID Connect RP-Initiated Logout 1.0, docs/openid-connect.md),
 * with JavaScript off: "Sign out of Gatehouse?", "You are signed out" and the refusal pass axe, and the
 * confirmation's plain form ends the session and reaches the registered post-logout URI, which
 * proves its CSP form-action lets the redirect through.
 */
let t: TestContext
let browser: Browser
let baseUrl: string
let client: TestClient
let userId: string
const EMAIL = 'logout-browser@example.com'
const PASSWORD = 'correct horse battery'
const SIGNED_OUT = 'https://client.example/signed-out'

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildOAuthTestApp, { signUp: { email: EMAIL, password: PASSWORD } }))
  client = await createClient(t.db, { name: 'Logout Planner', redirectUris: ['https://client.example/cb'], scopes: ['openid', 'read'] })
  await t.db
    .updateTable('applications')
    .set({ post_logout_redirect_uris: [SIGNED_OUT] })
    .where('id', '=', client.id)
    .execute()
  userId = (await t.db.selectFrom('users').select('id').where('email', '=', EMAIL).executeTakeFirstOrThrow()).id
  // The user signed in to the relying party once: its hint for them is trusted (docs/decisions/005-trusted-redirects.md).
  await grantAccess(t.db, EMAIL, client.id, ['openid', 'read'])
})
afterAll(() => closeBrowserTest({ browser, t }))

/** An ID Token Gatehouse signed for the user, of another session than the browser's (so the page asks). */
async function hintOfAnotherSession(): Promise<string> {
  const iat = Math.floor(t.clock().getTime() / 1000)
  return t.deps.identity.signIdToken('RS256', {
    iss: t.config.publicUrl,
    sub: userId,
    aud: client.clientId,
    iat,
    exp: iat + 3600,
    sid: 'another-session',
  })
}

async function loggedInPage(): Promise<{ page: Page; arrived: Promise<string> }> {
  const context = await browser.newContext({ javaScriptEnabled: false })
  let reached: (url: string) => void = () => {}
  const arrived = new Promise<string>((resolve) => (reached = resolve))
  await context.route('https://client.example/**', async (route) => {
    reached(route.request().url())
    await route.fulfill({ status: 200, contentType: 'text/html', body: '<p>client</p>' })
  })
  const page = await context.newPage()
  await logInThroughPage(page, baseUrl, EMAIL, PASSWORD)
  await page.waitForURL((url) => !url.pathname.startsWith('/login'))
  return { page, arrived }
}

async function expectLoggedOut(page: Page): Promise<void> {
  await page.goto(`${baseUrl}/applications`)
  expect(new URL(page.url()).pathname).toBe('/login')
}

it('asks on an axe-clean page, and its form signs out and returns to the registered URI with state', async () => {
  const { page, arrived } = await loggedInPage()
  const query = new URLSearchParams({ id_token_hint: await hintOfAnotherSession(), post_logout_redirect_uri: SIGNED_OUT, state: 'b1' })
  await page.goto(`${baseUrl}/oauth/logout?${query}`)
  expect(await page.locator('h1').textContent()).toBe('Sign out of Gatehouse?')
  await expectAccessible(page, 'the sign-out confirmation')
  await page.getByRole('button', { name: 'Sign out' }).click()
  expect(await arrived).toBe(`${SIGNED_OUT}?state=b1`)
  // The request was seen; let its navigation finish before the next one starts.
  await page.waitForURL(`${SIGNED_OUT}?state=b1`)
  await expectLoggedOut(page)
})

it('without a post_logout_redirect_uri, says "You are signed out" on an axe-clean page', async () => {
  const { page } = await loggedInPage()
  await page.goto(`${baseUrl}/oauth/logout?${new URLSearchParams({ client_id: client.clientId })}`)
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.waitForURL(/\/oauth\/logout\/confirm$/)
  expect(await page.locator('h1').textContent()).toBe('You are signed out')
  await expectAccessible(page, 'the signed-out page')
  await expectLoggedOut(page)
})

it('after signing out for an application nobody vouches for, links to its URI on an axe-clean page instead of going there', async () => {
  const stranger = await createClient(t.db, { name: 'Stranger App', redirectUris: ['https://client.example/cb'] })
  await t.db
    .updateTable('applications')
    .set({ post_logout_redirect_uris: [SIGNED_OUT] })
    .where('id', '=', stranger.id)
    .execute()
  const { page, arrived } = await loggedInPage()
  const query = new URLSearchParams({ client_id: stranger.clientId, post_logout_redirect_uri: SIGNED_OUT, state: 'u1' })
  await page.goto(`${baseUrl}/oauth/logout?${query}`)
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.waitForURL(/\/oauth\/logout\/confirm$/)
  expect(await page.locator('h1').textContent()).toBe('You are signed out')
  await expectAccessible(page, 'the signed-out page with a link back')
  await page.getByRole('link', { name: 'Return to client.example' }).click()
  expect(await arrived).toBe(`${SIGNED_OUT}?state=u1`)
  await page.waitForURL(`${SIGNED_OUT}?state=u1`)
  await expectLoggedOut(page)
})

it('refuses an unregistered post_logout_redirect_uri on an axe-clean page that sends nobody anywhere', async () => {
  const { page } = await loggedInPage()
  const query = new URLSearchParams({ client_id: client.clientId, post_logout_redirect_uri: 'https://evil.example/out' })
  const response = await page.goto(`${baseUrl}/oauth/logout?${query}`)
  expect(response?.status()).toBe(400)
  expect(new URL(page.url()).pathname).toBe('/oauth/logout')
  expect(await page.locator('h1').textContent()).toBe('Sign-out request refused')
  await expectAccessible(page, 'the sign-out refusal')
  // Nothing was ended: the session still opens the console.
  await page.goto(`${baseUrl}/applications`)
  expect(new URL(page.url()).pathname).toBe('/applications')
})
