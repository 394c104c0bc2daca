import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { setVerified, suspendApplication } from '../../src/operator/moderation.js'
import { BrowserSession } from '../helpers/browser-session.js'
import { axeViolations, closeBrowserTest, fillLogIn, logInThroughPage, startBrowserTest } from '../helpers/browser.js'
import { createApplicationViaConsole } from '../helpers/console.js'
import type { TestContext } from '../helpers/app.js'
import { type TestClient, buildOAuthTestApp, createClient } from '../integration/oauth/helpers.js'

/*
 * The consent page's honesty about the application (docs/operating/admin.md), in Chromium
 * without JavaScript: an unverified application's page says Gatehouse has not verified it and
 * shows no owner email; once an operator verified it, "Verified by Gatehouse". Both pass axe-core,
 * as does the owner's page of a suspended application.
 */
let t: TestContext
let browser: Browser
let baseUrl: string
let client: TestClient
let ownerEmail: string
const EMAIL = 'operator-consent@example.com'
const PASSWORD = 'correct horse battery'

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildOAuthTestApp, { signUp: { email: EMAIL, password: PASSWORD } }))
  client = await createClient(t.db, { name: 'Honest Planner', redirectUris: ['https://client.example/cb'] })
  await t.db
    .updateTable('applications')
    .set({ homepage_url: 'https://planner.example/', privacy_policy_url: 'https://planner.example/privacy' })
    .where('id', '=', client.id)
    .execute()
  const owner = await t.db
    .selectFrom('applications')
    .innerJoin('users', 'users.id', 'applications.owner_id')
    .select('users.email')
    .where('applications.id', '=', client.id)
    .executeTakeFirstOrThrow()
  ownerEmail = owner.email
})
afterAll(() => closeBrowserTest({ browser, t }))

const consentUrl = () =>
  `${baseUrl}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.clientId, scope: 'read', state: 's' })}`

let page: Page

it("an unverified application's consent page says so, shows its links and no owner email, and passes axe", async () => {
  const context = await browser.newContext({ javaScriptEnabled: false })
  page = await context.newPage()
  await page.goto(consentUrl())
  await page.waitForURL(/\/login\?next=/)
  await fillLogIn(page, EMAIL, PASSWORD)
  await page.waitForURL(/\/oauth\/authorize\?/)

  expect(await page.locator('h1').textContent()).toBe('Authorize Honest Planner')
  const verification = page.locator('#verification')
  expect(await verification.textContent()).toContain('Gatehouse has not verified this application.')
  expect(await verification.isVisible()).toBe(true)
  expect(await page.getByText('Verified by Gatehouse').count()).toBe(0)
  expect(await page.getByRole('link', { name: 'https://planner.example/', exact: true }).getAttribute('href')).toBe(
    'https://planner.example/',
  )
  expect(await page.getByRole('link', { name: 'https://planner.example/privacy' }).isVisible()).toBe(true)
  expect(await page.content()).not.toContain(ownerEmail)
  expect(await page.getByText('Registered by').count()).toBe(0)
  expect(await axeViolations(page)).toEqual([])
})

it('once an operator verified it, the page says "Verified by Gatehouse", and passes axe', async () => {
  await setVerified({ db: t.db, bus: t.deps.bus, record: async () => {} }, client.id, true, t.clock())
  await page.goto(consentUrl())
  await page.waitForURL(/\/oauth\/authorize\?/)
  expect(await page.locator('#verification').textContent()).toBe('Verified by Gatehouse')
  expect(await page.locator('#verification').isVisible()).toBe(true)
  expect(await page.getByText('has not verified').count()).toBe(0)
  expect(await page.content()).not.toContain(ownerEmail)
  expect(await axeViolations(page)).toEqual([])
  // The page still does its job.
  expect(await page.getByRole('button', { name: 'Authorize' }).isVisible()).toBe(true)
  await page.context().close()
})

it("the owner's page of a suspended application says so, and passes axe", async () => {
  const ownerSession = await new BrowserSession(t.app).signUpAndLogIn('operator-consent-owner@example.com', PASSWORD)
  const created = await createApplicationViaConsole(ownerSession, {
    name: 'Suspended Planner',
    homepage_url: 'https://suspended.example/',
    privacy_policy_url: 'https://suspended.example/privacy',
  })
  await suspendApplication({ db: t.db, bus: t.deps.bus, record: async () => {} }, created.id, t.clock())
  const context = await browser.newContext({ javaScriptEnabled: false })
  const ownerPage = await context.newPage()
  await logInThroughPage(ownerPage, baseUrl, 'operator-consent-owner@example.com', PASSWORD)
  await ownerPage.waitForURL(/\/applications$/)
  await ownerPage.goto(`${baseUrl}/applications/${created.id}`)
  expect(await ownerPage.locator('#app-status').textContent()).toContain('Suspended by the operator.')
  expect(await ownerPage.getByRole('status').first().isVisible()).toBe(true)
  expect(await axeViolations(ownerPage)).toEqual([])
  await context.close()
})
