import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { TestContext } from '../helpers/app.js'
import { buildTestApp } from '../helpers/app.js'
import { closeBrowserTest, expectAccessible, loggedInPage, startBrowserTest } from '../helpers/browser.js'
import { basicAuth, createApplication, createUser } from '../helpers/factories.js'

/*
 * The operator enables the client credentials grant of a machine application from its admin
 * page, in Chromium without JavaScript (docs/operating/admin.md "Machine clients"): ticks its
 * scopes, is refused without one, then turns it off; each page passes axe. The application then
 * gets, and then is refused, a token for itself.
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

async function grantType(app: { clientId: string; clientSecret: string }): Promise<Record<string, unknown>> {
  const res = await fetch(`${baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { authorization: basicAuth(app.clientId, app.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  })
  return (await res.json()) as Record<string, unknown>
}

it('enables, refuses an empty choice, and turns off the grant from the admin pages; no axe violation', async () => {
  const owner = await createUser(t.db, { email: 'integrator@example.com' })
  const app = await createApplication(t.db, { ownerId: owner.id, name: 'Nightly sync', kind: 'machine' })
  const page = await loggedInPage(browser, baseUrl, EMAIL, PASSWORD)
  const context = page.context()

  await page.goto(`${baseUrl}/admin/applications/${app.id}`)
  await page.getByRole('link', { name: 'Client credentials' }).click()
  await page.waitForURL(`${baseUrl}/admin/applications/${app.id}/client-credentials`)
  await expectAccessible(page, 'client credentials')

  await page.getByRole('button', { name: 'Enable client credentials' }).click()
  expect(await page.getByRole('alert').textContent()).toContain('at least one scope')
  await expectAccessible(page, 'client credentials refused')

  await page.getByLabel(/^read/).check()
  await page.getByLabel(/^write_teams/).check()
  await page.getByRole('button', { name: 'Enable client credentials' }).click()
  await page.waitForURL(`${baseUrl}/admin/applications/${app.id}?done=client-credentials`)
  expect(await page.getByRole('status').textContent()).toBe('The client credentials grant is saved.')
  expect(await grantType(app)).toMatchObject({ scope: 'read write_teams', token_type: 'Bearer' })

  await page.getByRole('link', { name: 'Client credentials' }).click()
  await page.getByRole('button', { name: 'Turn client credentials off' }).click()
  await page.waitForURL(`${baseUrl}/admin/applications/${app.id}?done=client-credentials`)
  expect(await grantType(app)).toMatchObject({ error: 'unauthorized_client' })
  const events = await t.db.selectFrom('audit_events').select('event').where('client_id', '=', app.clientId).orderBy('id').execute()
  expect(events.map((e) => e.event)).toEqual(['operator.client_credentials_on', 'operator.client_credentials_off'])
  await context.close()
})

it('offers no form for an application that is not a machine', async () => {
  const web = await createApplication(t.db, { name: 'Web app' })
  const page = await loggedInPage(browser, baseUrl, EMAIL, PASSWORD)
  const context = page.context()
  await page.goto(`${baseUrl}/admin/applications/${web.id}`)
  expect(await page.getByRole('link', { name: 'Client credentials' }).count()).toBe(0)
  await page.goto(`${baseUrl}/admin/applications/${web.id}/client-credentials`)
  expect(await page.locator('main form').count()).toBe(0)
  expect(await page.locator('main').textContent()).toContain('This is not a machine application')
  await expectAccessible(page, 'not a machine')
  await context.close()
})
