import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { sha256Hex } from '../../src/lib/crypto.js'
import { buildTestApp, type TestContext } from '../helpers/app.js'
import { closeBrowserTest, startBrowserTest } from '../helpers/browser.js'
import { linkTo } from '../helpers/mailbox.js'

/*
 * The spec's registration path in a real browser, without JavaScript in the pages: sign up,
 * log in, verify the address by the mailed link, open the user menu, choose "Your Applications", register an application and read its
 * credentials from #client-id and #client-secret.
 */

let t: TestContext
let browser: Browser
let baseUrl: string

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildTestApp))
})
afterAll(() => closeBrowserTest({ browser, t }))

it('registers an application through the console', async () => {
  const context = await browser.newContext({ javaScriptEnabled: false })
  const page = await context.newPage()

  await page.goto(`${baseUrl}/`)
  await page.getByRole('link', { name: 'Create a free account' }).click()
  await page.getByLabel('Email').fill('browser@example.com')
  await page.getByLabel('Password').fill('correct horse battery')
  await page.getByRole('button', { name: 'Sign up' }).click()

  await page.waitForURL(/\/login\?/)
  expect(await page.getByLabel('Email').inputValue()).toBe('browser@example.com')
  await page.getByLabel('Password').fill('correct horse battery')
  await page.getByRole('button', { name: 'Log in' }).click()
  await page.waitForURL(`${baseUrl}/applications`)

  // Registering applications needs the verified address: the link from the mail, confirmed.
  await page.goto(`${baseUrl}${linkTo(t.mailbox.last('browser@example.com'), '/verify-email')}`)
  await page.getByRole('button', { name: 'Verify my email address' }).click()
  await page.waitForURL(`${baseUrl}/applications?verified=1`)

  // The user menu is a <details>: closed until its summary is clicked.
  const menuLink = page.getByRole('link', { name: 'Your Applications' })
  expect(await menuLink.isVisible()).toBe(false)
  await page.locator('details.user-menu > summary').click()
  expect(await page.getByRole('link', { name: 'Authorized Applications' }).isVisible()).toBe(true)
  await menuLink.click()
  await page.waitForURL(`${baseUrl}/applications`)
  expect(await page.locator('h1').textContent()).toBe('Your Applications')

  await page.getByRole('link', { name: 'New application' }).click()
  await page.waitForURL(`${baseUrl}/applications/new`)
  await page.getByLabel('Application name').fill('Browser Planner')
  await page
    .getByRole('textbox', { name: /^Redirect URIs/ })
    .fill('https://planner.example.com/oauth/callback\nhttp://127.0.0.1:8080/callback')
  await page.getByLabel('write_users').uncheck()
  await page.getByLabel('Require PKCE').check()
  await page.getByRole('button', { name: 'Register application' }).click()
  await page.waitForLoadState()

  const clientId = (await page.locator('#client-id').textContent())?.trim() ?? ''
  const clientSecret = (await page.locator('#client-secret').textContent())?.trim() ?? ''
  expect(clientId).toMatch(/^[A-Za-z0-9_-]{24}$/)
  expect(clientSecret).toMatch(/^gcs_[A-Za-z0-9_-]{43}$/)
  expect(await page.getByText('cannot be shown again').isVisible()).toBe(true)

  const row = await t.db.selectFrom('applications').selectAll().where('client_id', '=', clientId).executeTakeFirstOrThrow()
  expect(row).toMatchObject({
    name: 'Browser Planner',
    secret_hash: sha256Hex(clientSecret),
    redirect_uris: ['https://planner.example.com/oauth/callback', 'http://127.0.0.1:8080/callback'],
    allowed_scopes: ['openid', 'email', 'profile', 'read', 'write', 'write_members', 'write_teams', 'write_events'],
    require_pkce: true,
    allow_implicit: false,
    id_token_alg: 'RS256',
  })

  // Back on the list, then the application page: the client_id again, the secret never.
  await page.goto(`${baseUrl}/applications`)
  await page.getByRole('link', { name: 'Browser Planner' }).click()
  expect((await page.locator('#client-id').textContent())?.trim()).toBe(clientId)
  expect(await page.locator('#client-secret').count()).toBe(0)
  expect(await page.content()).not.toContain(clientSecret)

  // A new secret: confirmed on its own page, shown once, and the stored digest follows it.
  await page.getByRole('link', { name: 'Generate a new client secret' }).click()
  await page.getByRole('button', { name: 'Generate a new client secret' }).click()
  await page.waitForLoadState()
  const newSecret = (await page.locator('#client-secret').textContent())?.trim() ?? ''
  expect(newSecret).toMatch(/^gcs_/)
  expect(newSecret).not.toBe(clientSecret)
  const rotated = await t.db.selectFrom('applications').select('secret_hash').where('client_id', '=', clientId).executeTakeFirstOrThrow()
  expect(rotated.secret_hash).toBe(sha256Hex(newSecret))

  await context.close()
})
