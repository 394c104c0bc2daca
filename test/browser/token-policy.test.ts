import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { TestContext } from '../helpers/app.js'
import { buildTestApp } from '../helpers/app.js'
import { closeBrowserTest, expectAccessible, logInThroughPage, startBrowserTest } from '../helpers/browser.js'
import { createApplication } from '../helpers/factories.js'

/*
 * The owner changes an application's token policy in Chromium without JavaScript
 * (docs/applications.md "Token policy"): the application page's Tokens section, the page that
 * explains a change, the choice saved; then "Authorized Applications" with an expiring grant.
 * Each page passes axe.
 */
let t: TestContext
let browser: Browser
let baseUrl: string
const EMAIL = 'policy-browser@example.com'
const PASSWORD = 'correct horse battery'

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildTestApp, { signUp: { email: EMAIL, password: PASSWORD } }))
})
afterAll(() => closeBrowserTest({ browser, t }))

it('requires DPoP and expiring tokens from the console; no axe violation', async () => {
  const owner = await t.db.selectFrom('users').select('id').where('email', '=', EMAIL).executeTakeFirstOrThrow()
  const app = await createApplication(t.db, { ownerId: owner.id, name: 'Browser Policy' })
  const context = await browser.newContext({ javaScriptEnabled: false })
  const page = await context.newPage()
  await logInThroughPage(page, baseUrl, EMAIL, PASSWORD)
  await page.waitForURL(`${baseUrl}/applications`)

  await page.goto(`${baseUrl}/applications/${app.id}`)
  expect(await page.locator('#token-policy').textContent()).toContain('Valid until revoked')
  await page.getByRole('link', { name: 'Change the token policy' }).click()
  await page.waitForURL(`${baseUrl}/applications/${app.id}/tokens`)
  await expectAccessible(page, 'token policy')
  expect(await page.locator('#policy-consequences').isVisible()).toBe(true)

  await page.getByLabel(/^Required/).check()
  await page.getByLabel(/^Expiring access tokens/).check()
  await page.getByLabel('Access-token lifetime').selectOption('8h')
  await page.getByLabel(/^Refresh-token lifetime/).selectOption('90d')
  await page.getByRole('button', { name: 'Save the token policy' }).click()
  await page.waitForLoadState()
  expect(await page.getByRole('status').first().textContent()).toBe(
    'Token policy changed: DPoP required, access tokens 8 hours, refresh tokens 90 days.',
  )
  await expectAccessible(page, 'application page after the change')
  const row = await t.db
    .selectFrom('applications')
    .select(['require_dpop', 'access_token_ttl_seconds', 'refresh_token_ttl_seconds'])
    .where('id', '=', app.id)
    .executeTakeFirstOrThrow()
  expect(row).toEqual({ require_dpop: true, access_token_ttl_seconds: 8 * 3600, refresh_token_ttl_seconds: 90 * 86_400 })

  // The owner's own grant, with a live refresh-token family as the refresh grant makes it.
  const now = t.clock().getTime()
  await t.db
    .insertInto('grants')
    .values({ user_id: owner.id, application_id: app.id, scopes: ['read'], created_at: new Date(now), updated_at: new Date(now) })
    .execute()
  await t.db
    .insertInto('refresh_token_families')
    .values({
      application_id: app.id,
      user_id: owner.id,
      scopes: ['read'],
      access_token_ttl_seconds: 8 * 3600,
      refresh_token_ttl_seconds: 90 * 86_400,
      created_at: new Date(now),
      expires_at: new Date(now + 365 * 86_400_000),
    })
    .execute()
  await page.goto(`${baseUrl}/authorized-applications`)
  expect(await page.locator('.expiring-grant').textContent()).toContain('Access tokens expire after 8 hours and are renewed until')
  await expectAccessible(page, 'authorized applications with an expiring grant')
  await context.close()
})
