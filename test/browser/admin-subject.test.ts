import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, beforeEach, afterEach, expect, it } from 'vitest'
import { formatTime } from '../../src/http/routes/console/view-models.js'
import type { TestContext } from '../helpers/app.js'
import { buildTestApp } from '../helpers/app.js'
import { closeBrowserTest, expectAccessible, logInThroughPage, startBrowserTest } from '../helpers/browser.js'
import { type AccessTokenFixture, createAccessToken, createApplication, createUser } from '../helpers/factories.js'

/*
 * docs/operating/admin.md "The admin pages": every /admin page about a user or an application names that subject, not the
 * operator looking at it, and its controls act on that subject. Driven in Chromium without
 * JavaScript by clicking, as an operator would: the page's own `user` was once overwritten by
 * the logged-in one (src/http/render.ts), which tests posting to the routes could not see.
 * After each click the database says what happened, to whom, and that the operator is untouched.
 */
let t: TestContext
let browser: Browser
let baseUrl: string
let context: BrowserContext
let page: Page
let operatorId: string
const OPERATOR = 'operator@example.com'
const PASSWORD = 'correct horse battery'
// Days apart from the operator's sign-up, so a page showing the wrong account's date is seen.
const SUBJECT_CREATED = new Date('2021-03-04T05:06:00Z')
const OWNER_CREATED = new Date('2022-07-08T09:10:00Z')

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildTestApp, { signUp: { email: OPERATOR, password: PASSWORD } }))
  const op = await t.db
    .updateTable('users')
    .set({ is_operator: true })
    .where('email', '=', OPERATOR)
    .returning('id')
    .executeTakeFirstOrThrow()
  operatorId = op.id
})
afterAll(() => closeBrowserTest({ browser, t }))
beforeEach(async () => {
  context = await browser.newContext({ javaScriptEnabled: false })
  page = await context.newPage()
})
afterEach(async () => {
  await context?.close()
})

const pageIsAccessible = (path: string) => expectAccessible(page, path)

/** The <dd> after the <dt> named `term` on a subject's page. */
function field(term: string) {
  return page.locator(`dl > dt:text-is("${term}") + dd`)
}

async function logInAndOpenOperator() {
  await logInThroughPage(page, baseUrl, OPERATOR, PASSWORD)
  await page.waitForURL(`${baseUrl}/applications`)
  await page.locator('details.user-menu > summary').click()
  await page.getByRole('link', { name: 'Operator' }).click()
  await page.waitForURL(`${baseUrl}/admin`)
}

/** The header's account menu names the operator on every page, whatever the page is about. */
async function expectViewerIsOperator() {
  expect(await page.locator('details.user-menu > summary').textContent()).toBe(`Account menu of ${OPERATOR}`)
}

async function operatorRow() {
  return t.db.selectFrom('users').select(['suspended_at']).where('id', '=', operatorId).executeTakeFirst()
}

async function tokenRevoked(token: AccessTokenFixture) {
  const row = await t.db.selectFrom('access_tokens').select('revoked_at').where('token_hash', '=', token.digest).executeTakeFirst()
  return row === undefined || row.revoked_at !== null
}

it('searches a user, opens their page, suspends, unsuspends and deletes that user, not the operator', async () => {
  const subject = await createUser(t.db, { email: 'subject@example.com', now: SUBJECT_CREATED })
  const subjectApp = await createApplication(t.db, { ownerId: subject.id, name: 'Subject Tool' })
  const otherApp = await createApplication(t.db, { name: 'Bystander App' })
  const token = await createAccessToken(t.db, { userId: subject.id, applicationId: otherApp.id })
  const operatorToken = await createAccessToken(t.db, { userId: operatorId, applicationId: otherApp.id })
  const userPage = `${baseUrl}/admin/users/${subject.id}`

  await logInAndOpenOperator()
  await page.getByRole('link', { name: 'Users', exact: true }).click()
  await page.waitForURL(`${baseUrl}/admin/users`)
  await page.getByLabel('Email contains').fill('subject')
  await page.getByRole('button', { name: 'Search' }).click()
  await page.waitForURL(`${baseUrl}/admin/users?q=subject`)
  await pageIsAccessible('/admin/users?q=subject')
  await page.getByRole('link', { name: 'subject@example.com' }).click()
  await page.waitForURL(userPage)
  await pageIsAccessible('/admin/users/:id')

  expect(await page.title()).toMatch(/^subject@example\.com · /)
  expect(await page.locator('h1').textContent()).toBe('subject@example.com')
  expect(await field('Created').textContent()).toBe(formatTime(SUBJECT_CREATED))
  expect(await field('Status').textContent()).toBe('Active')
  expect(await field('Operator').textContent()).toBe('No')
  expect(await field('Applications').textContent()).toContain('Subject Tool')
  await expectViewerIsOperator()
  expect(await page.getByRole('link', { name: 'Unsuspend' }).count()).toBe(0)

  await page.getByRole('link', { name: 'Suspend', exact: true }).click()
  await page.waitForURL(`${userPage}/suspend`)
  expect(await page.locator('h1').textContent()).toBe('Suspend subject@example.com?')
  await pageIsAccessible('/admin/users/:id/suspend')
  await page.getByRole('button', { name: 'Suspend account' }).click()
  await page.waitForURL(`${userPage}?done=suspended`)
  const suspended = await t.db.selectFrom('users').select('suspended_at').where('id', '=', subject.id).executeTakeFirstOrThrow()
  expect(suspended.suspended_at).not.toBeNull()
  expect(await tokenRevoked(token)).toBe(true)
  const toolRow = await t.db.selectFrom('applications').select('suspended_at').where('id', '=', subjectApp.id).executeTakeFirstOrThrow()
  expect(toolRow.suspended_at).not.toBeNull()
  expect((await operatorRow())?.suspended_at).toBeNull()
  expect(await tokenRevoked(operatorToken)).toBe(false)

  expect(await page.locator('h1').textContent()).toBe('subject@example.com')
  expect(await page.getByRole('status').textContent()).toBe('The account is suspended.')
  expect(await field('Status').textContent()).toBe(`Suspended since ${formatTime(suspended.suspended_at!)}`)
  expect(await page.getByRole('link', { name: 'Suspend', exact: true }).count()).toBe(0)
  await expectViewerIsOperator()
  await pageIsAccessible('/admin/users/:id suspended')

  await page.getByRole('link', { name: 'Unsuspend' }).click()
  await page.waitForURL(`${userPage}/unsuspend`)
  expect(await page.locator('h1').textContent()).toBe('Unsuspend subject@example.com?')
  await page.getByRole('button', { name: 'Unsuspend account' }).click()
  await page.waitForURL(`${userPage}?done=unsuspended`)
  const active = await t.db.selectFrom('users').select('suspended_at').where('id', '=', subject.id).executeTakeFirstOrThrow()
  expect(active.suspended_at).toBeNull()
  expect(await page.getByRole('status').textContent()).toBe('The account is active again.')
  expect(await field('Status').textContent()).toBe('Active')
  expect(await page.getByRole('link', { name: 'Unsuspend' }).count()).toBe(0)

  await page.getByRole('link', { name: 'Delete' }).click()
  await page.waitForURL(`${userPage}/delete`)
  expect(await page.locator('h1').textContent()).toBe('Delete subject@example.com?')
  await pageIsAccessible('/admin/users/:id/delete')
  await page.getByRole('button', { name: 'Delete account' }).click()
  await page.waitForURL(`${baseUrl}/admin/users?deleted=1`)
  expect(await page.getByRole('status').textContent()).toBe('The account is deleted.')
  expect(await t.db.selectFrom('users').select('id').where('id', '=', subject.id).executeTakeFirst()).toBeUndefined()
  expect(await operatorRow()).toEqual({ suspended_at: null })
  expect(await tokenRevoked(operatorToken)).toBe(false)
}, 120_000)

it('searches an application, opens it and its owner, suspends, unsuspends, verifies and deletes that application', async () => {
  const owner = await createUser(t.db, { email: 'app-owner@example.com', now: OWNER_CREATED })
  const subject = await createApplication(t.db, { ownerId: owner.id, name: 'Target <App>' })
  const bystander = await createApplication(t.db, { ownerId: owner.id, name: 'Target Neighbour' })
  const token = await createAccessToken(t.db, { userId: owner.id, applicationId: subject.id })
  const bystanderToken = await createAccessToken(t.db, { userId: owner.id, applicationId: bystander.id })
  const appPage = `${baseUrl}/admin/applications/${subject.id}`
  const appRow = () =>
    t.db.selectFrom('applications').select(['suspended_at', 'verified_at']).where('id', '=', subject.id).executeTakeFirst()
  const bystanderUntouched = async () => {
    const row = await t.db
      .selectFrom('applications')
      .select(['suspended_at', 'verified_at'])
      .where('id', '=', bystander.id)
      .executeTakeFirstOrThrow()
    expect(row).toEqual({ suspended_at: null, verified_at: null })
    expect(await tokenRevoked(bystanderToken)).toBe(false)
  }

  await logInAndOpenOperator()
  await page.getByRole('link', { name: 'Applications', exact: true }).click()
  await page.waitForURL(`${baseUrl}/admin/applications`)
  await page.getByLabel("Name, client ID or owner's email").fill('target <app>')
  await page.getByRole('button', { name: 'Search' }).click()
  await page.waitForURL(/\/admin\/applications\?q=/)
  await page.getByRole('link', { name: 'Target <App>' }).click()
  await page.waitForURL(appPage)
  await pageIsAccessible('/admin/applications/:id')
  expect(await page.locator('h1').textContent()).toBe('Target <App>')
  expect(await field('Client ID').textContent()).toBe(subject.clientId)
  expect(await field('Owner').textContent()).toBe('app-owner@example.com')
  expect(await field('Status').textContent()).toBe('Active')
  expect(await field('Verified').textContent()).toBe('No')
  await expectViewerIsOperator()

  // The owner link opens the owner's page, which names the owner, not the operator.
  await page.getByRole('link', { name: 'app-owner@example.com' }).click()
  await page.waitForURL(`${baseUrl}/admin/users/${owner.id}`)
  expect(await page.locator('h1').textContent()).toBe('app-owner@example.com')
  expect(await field('Created').textContent()).toBe(formatTime(OWNER_CREATED))
  expect(await page.getByRole('link', { name: 'Delete' }).getAttribute('href')).toBe(`/admin/users/${owner.id}/delete`)
  await page.getByRole('link', { name: 'Target <App>' }).click()
  await page.waitForURL(appPage)

  await page.getByRole('link', { name: 'Suspend', exact: true }).click()
  await page.waitForURL(`${appPage}/suspend`)
  expect(await page.locator('h1').textContent()).toBe('Suspend Target <App>?')
  await page.getByRole('button', { name: 'Suspend application' }).click()
  await page.waitForURL(`${appPage}?done=suspend`)
  const suspended = await appRow()
  expect(suspended?.suspended_at).not.toBeNull()
  expect(await tokenRevoked(token)).toBe(true)
  await bystanderUntouched()
  expect(await page.locator('h1').textContent()).toBe('Target <App>')
  expect(await page.getByRole('status').textContent()).toBe('The application is suspended.')
  expect(await field('Status').textContent()).toBe(`Suspended since ${formatTime(suspended!.suspended_at!)}`)
  expect(await page.getByRole('link', { name: 'Suspend', exact: true }).count()).toBe(0)

  await page.getByRole('link', { name: 'Unsuspend' }).click()
  await page.waitForURL(`${appPage}/unsuspend`)
  expect(await page.locator('h1').textContent()).toBe('Unsuspend Target <App>?')
  await page.getByRole('button', { name: 'Unsuspend application' }).click()
  await page.waitForURL(`${appPage}?done=unsuspend`)
  expect((await appRow())?.suspended_at).toBeNull()
  expect(await field('Status').textContent()).toBe('Active')
  expect(await page.getByRole('link', { name: 'Unsuspend' }).count()).toBe(0)

  await page.getByRole('link', { name: 'Verify', exact: true }).click()
  await page.waitForURL(`${appPage}/verify`)
  expect(await page.locator('h1').textContent()).toBe('Verify Target <App>?')
  await pageIsAccessible('/admin/applications/:id/verify')
  await page.getByRole('button', { name: 'Verify application' }).click()
  await page.waitForURL(`${appPage}?done=verify`)
  const verified = await appRow()
  expect(verified?.verified_at).not.toBeNull()
  await bystanderUntouched()
  expect(await page.getByRole('status').textContent()).toBe('The application is verified.')
  expect(await field('Verified').textContent()).toBe(`Since ${formatTime(verified!.verified_at!)}`)
  expect(await page.getByRole('link', { name: 'Remove verification' }).count()).toBe(1)

  await page.getByRole('link', { name: 'Delete' }).click()
  await page.waitForURL(`${appPage}/delete`)
  expect(await page.locator('h1').textContent()).toBe('Delete Target <App>?')
  await pageIsAccessible('/admin/applications/:id/delete')
  await page.getByRole('button', { name: 'Delete application' }).click()
  await page.waitForURL(`${baseUrl}/admin/applications?deleted=1`)
  expect(await page.getByRole('status').textContent()).toBe('The application is deleted.')
  expect(await appRow()).toBeUndefined()
  await bystanderUntouched()
  expect(await t.db.selectFrom('users').select('id').where('id', '=', owner.id).executeTakeFirst()).toEqual({ id: owner.id })
  expect(await operatorRow()).toEqual({ suspended_at: null })
}, 120_000)
