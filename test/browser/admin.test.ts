import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { TestContext } from '../helpers/app.js'
import { buildTestApp } from '../helpers/app.js'
import { closeBrowserTest, expectAccessible, loggedInPage, startBrowserTest } from '../helpers/browser.js'
import { createAccessToken, createApplication, createUser } from '../helpers/factories.js'

/*
 * The admin pages in Chromium without JavaScript (docs/operating/admin.md "The admin pages"; every page works without scripts): an
 * operator reaches them from the user menu, suspends an application through its confirmation
 * page, and filters the audit log; axe-core finds no WCAG 2.1 A/AA fault on any of them.
 */
let t: TestContext
let browser: Browser
let baseUrl: string
let appId: string
let userId: string
const EMAIL = 'operator@example.com'
const PASSWORD = 'correct horse battery'

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildTestApp, { signUp: { email: EMAIL, password: PASSWORD, operator: true } }))
  const owner = await createUser(t.db, { email: 'developer@example.com' })
  userId = owner.id
  const app = await createApplication(t.db, { ownerId: owner.id, name: 'Phishy <Bank>' })
  appId = app.id
  await createAccessToken(t.db, { userId: owner.id, applicationId: app.id })
})
afterAll(() => closeBrowserTest({ browser, t }))

it('walks the admin pages without JavaScript, suspends an application, filters the audit log; no axe violation', async () => {
  const page = await loggedInPage(browser, baseUrl, EMAIL, PASSWORD)
  const context = page.context()

  await page.locator('details.user-menu > summary').click()
  await page.getByRole('link', { name: 'Operator' }).click()
  await page.waitForURL(`${baseUrl}/admin`)
  await expectAccessible(page, '/admin')

  await page.getByRole('link', { name: 'Applications', exact: true }).click()
  await page.getByLabel("Name, client ID or owner's email").fill('phishy')
  await page.getByRole('button', { name: 'Search' }).click()
  await page.waitForURL(/\/admin\/applications\?q=phishy/)
  await expectAccessible(page, '/admin/applications?q=phishy')
  await page.getByRole('link', { name: 'Phishy <Bank>' }).click()
  await page.waitForURL(`${baseUrl}/admin/applications/${appId}`)
  await expectAccessible(page, '/admin/applications/:id')

  await page.getByRole('link', { name: 'Suspend' }).click()
  await page.waitForURL(`${baseUrl}/admin/applications/${appId}/suspend`)
  await expectAccessible(page, 'confirmation')
  await page.getByRole('button', { name: 'Suspend application' }).click()
  await page.waitForURL(`${baseUrl}/admin/applications/${appId}?done=suspend`)
  expect(await page.getByRole('status').textContent()).toBe('The application is suspended.')
  const row = await t.db.selectFrom('applications').select('suspended_at').where('id', '=', appId).executeTakeFirstOrThrow()
  expect(row.suspended_at).not.toBeNull()

  await page.goto(`${baseUrl}/admin/users?q=developer`)
  await expectAccessible(page, '/admin/users')
  await page.goto(`${baseUrl}/admin/users/${userId}`)
  await expectAccessible(page, '/admin/users/:id')

  await page.goto(`${baseUrl}/admin/audit`)
  await page.getByLabel('Event').selectOption('operator.application_suspended')
  await page.getByRole('button', { name: 'Filter' }).click()
  await page.waitForURL(/\/admin\/audit\?event=operator.application_suspended/)
  expect(await page.locator('table tbody tr').count()).toBe(1)
  expect(await page.locator('table tbody tr td:nth-child(4)').textContent()).toBe(EMAIL)
  await expectAccessible(page, '/admin/audit')
  await context.close()
})
