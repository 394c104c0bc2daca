import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { TestContext } from '../helpers/app.js'
import { buildTestApp } from '../helpers/app.js'
import { closeBrowserTest, expectAccessible, loggedInPage, startBrowserTest } from '../helpers/browser.js'
import { basicAuth, createApplication, createUser } from '../helpers/factories.js'

/*
 * The operator declares a resource server's resource identifiers (RFC 8707) and the lifetime of
 * tokens for them from its admin page, in Chromium without JavaScript (docs/operating/admin.md
 * "Resource identifiers"): a malformed one is refused with the form kept, a good list is saved
 * and audited, and a machine then gets a token for that API alone; each page passes axe.
 */
let t: TestContext
let browser: Browser
let baseUrl: string
const EMAIL = 'operator@example.com'
const PASSWORD = 'correct horse battery'

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildTestApp, { signUp: { email: EMAIL, password: PASSWORD, operator: true } }))
})
afterAll(() => closeBrowserTest({ browser, t }))

it('declares identifiers and a lifetime from the admin pages, refusing a malformed one; no axe violation', async () => {
  const owner = await createUser(t.db, { email: 'api-team@example.com' })
  const api = await createApplication(t.db, { ownerId: owner.id, name: 'Teams API', resourceServer: true })
  const machine = await createApplication(t.db, { name: 'Nightly sync', kind: 'machine', clientCredentialsScopes: ['read'] })
  const page = await loggedInPage(browser, baseUrl, EMAIL, PASSWORD)
  const context = page.context()

  await page.goto(`${baseUrl}/admin/applications/${api.id}`)
  await page.getByRole('link', { name: 'Resource identifiers' }).click()
  await page.waitForURL(`${baseUrl}/admin/applications/${api.id}/resources`)
  await expectAccessible(page, 'resource identifiers')

  await page.getByLabel('Resource identifiers, one per line').fill('https://api.example.com/\nhttp://api.example.com/')
  await page.getByRole('button', { name: 'Save resource identifiers' }).click()
  expect(await page.getByRole('alert').textContent()).toContain('is not an https URL')
  expect(await page.getByLabel('Resource identifiers, one per line').inputValue()).toContain('http://api.example.com/')
  await expectAccessible(page, 'resource identifiers refused')

  await page.getByLabel('Resource identifiers, one per line').fill('https://api.example.com/\nhttps://api.example.com/v2')
  await page.getByLabel('Lifetime of tokens for them, in seconds').fill('900')
  await page.getByRole('button', { name: 'Save resource identifiers' }).click()
  await page.waitForURL(`${baseUrl}/admin/applications/${api.id}?done=resources`)
  expect(await page.getByRole('status').textContent()).toBe('The resource identifiers are saved.')
  expect(await page.locator('#resource-identifiers').textContent()).toContain('https://api.example.com/v2')
  await expectAccessible(page, 'application with resource identifiers')

  const res = await fetch(`${baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { authorization: basicAuth(machine.clientId, machine.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&resource=https%3A%2F%2Fapi.example.com%2Fv2',
  })
  expect(await res.json()).toMatchObject({ token_type: 'Bearer', expires_in: 900 })

  // Removing one by editing the list.
  await page.getByRole('link', { name: 'Resource identifiers' }).click()
  await page.getByLabel('Resource identifiers, one per line').fill('https://api.example.com/')
  await page.getByRole('button', { name: 'Save resource identifiers' }).click()
  await page.waitForURL(`${baseUrl}/admin/applications/${api.id}?done=resources`)
  const rows = await t.db.selectFrom('resource_identifiers').select('identifier').where('application_id', '=', api.id).execute()
  expect(rows.map((r) => r.identifier)).toEqual(['https://api.example.com/'])
  const events = await t.db.selectFrom('audit_events').select('event').where('client_id', '=', api.clientId).orderBy('id').execute()
  expect(events.map((e) => e.event)).toEqual(['application.resources_changed', 'application.resources_changed'])
  await context.close()
})

it('offers no link for an application that is neither a resource server nor holds identifiers', async () => {
  const web = await createApplication(t.db, { name: 'Web app' })
  const page = await loggedInPage(browser, baseUrl, EMAIL, PASSWORD)
  const context = page.context()
  await page.goto(`${baseUrl}/admin/applications/${web.id}`)
  expect(await page.getByRole('link', { name: 'Resource identifiers' }).count()).toBe(0)
  await context.close()
})
