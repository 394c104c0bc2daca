import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { refreshSecondFactor } from '../../src/repositories/second-factor.js'
import type { TestContext } from '../helpers/app.js'
import { buildTestApp } from '../helpers/app.js'
import {
  closeBrowserTest,
  expectAccessible,
  listenOnLoopback,
  loggedInPage,
  logInThroughPage,
  startBrowserTest,
} from '../helpers/browser.js'
import { createUser } from '../helpers/factories.js'

/*
 * Sudo mode and the operator's second-factor reset in Chromium without JavaScript (docs/accounts.md "Re-authentication", "Lost second factor: the operator's reset"): an
 * operator whose log-in is older than REAUTH_WINDOW_MINUTES opens a user's reset, is asked
 * "Confirm it's you", types the password, comes back to the confirmation and resets the user's
 * second factor; the admin user page, /reauth and the confirmation are axe-clean, and so are the
 * pages that tell an operator without a second factor to enrol first, and one whose session did not
 * use the account's factor to use it.
 */
let t: TestContext
let browser: Browser
let baseUrl: string
let userId: string
const EMAIL = 'operator@example.com'
const PASSWORD = 'correct horse battery'

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildTestApp, { signUp: { email: EMAIL, password: PASSWORD, operator: true } }))
  const user = await createUser(t.db, { email: 'lost-phone@example.com', emailVerified: true })
  userId = user.id
  await t.db.insertInto('totp_secrets').values({ user_id: userId, secret_sealed: 'sealed', last_step: 0, created_at: new Date() }).execute()
  await refreshSecondFactor(t.db, userId)
})
afterAll(() => closeBrowserTest({ browser, t }))

it('tells an operator without a second factor to enrol first under REQUIRE_TWO_FACTOR=operators; no axe violation', async () => {
  const strict = await listenOnLoopback((env) => buildTestApp({ ...env, REQUIRE_TWO_FACTOR: 'operators' }, t.testDb))
  try {
    const context = await browser.newContext({ javaScriptEnabled: false })
    const page = await context.newPage()
    await logInThroughPage(page, strict.baseUrl, EMAIL, PASSWORD)
    await page.waitForURL(`${strict.baseUrl}/applications`)
    const res = await page.goto(`${strict.baseUrl}/admin`)
    expect(res?.status()).toBe(403)
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Set up a second factor first')
    await expectAccessible(page, 'enrol first')
    // The account enrols elsewhere: this session, opened with the password alone, must use the
    // factor first (docs/decisions/012-reauthentication-and-policy.md); the factor goes again after.
    const operator = await t.db.selectFrom('users').select('id').where('email', '=', EMAIL).executeTakeFirstOrThrow()
    await t.db
      .insertInto('totp_secrets')
      .values({ user_id: operator.id, secret_sealed: 'sealed', last_step: 0, created_at: new Date() })
      .execute()
    await refreshSecondFactor(t.db, operator.id)
    try {
      const again = await page.goto(`${strict.baseUrl}/admin`)
      expect(again?.status()).toBe(403)
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Use your second factor first')
      await expectAccessible(page, 'use the second factor first')
    } finally {
      await t.db.deleteFrom('totp_secrets').where('user_id', '=', operator.id).execute()
      await refreshSecondFactor(t.db, operator.id)
    }
    await context.close()
  } finally {
    await strict.t.close()
  }
})

it('confirms the password at /reauth and resets a user’s second factor through the confirmation, without JavaScript; no axe violation', async () => {
  const page = await loggedInPage(browser, baseUrl, EMAIL, PASSWORD)
  const context = page.context()
  t.clock.advance(11 * 60_000)

  await page.goto(`${baseUrl}/admin/users/${userId}`)
  await expectAccessible(page, '/admin/users/:id')
  expect(await page.locator('dd', { hasText: 'Enrolled: authenticator app yes' }).count()).toBe(1)
  await page.getByRole('link', { name: 'Reset second factor' }).click()
  const confirmation = `/admin/users/${userId}/reset-second-factor`
  await page.waitForURL(`${baseUrl}/reauth?next=${encodeURIComponent(confirmation)}`)
  await expectAccessible(page, '/reauth')

  await page.getByLabel('Your password').fill('not the password')
  await page.getByRole('button', { name: 'Confirm' }).click()
  expect(await page.getByRole('alert').textContent()).toBe('The password is not right.')
  await expectAccessible(page, '/reauth with an error')
  await page.getByLabel('Your password').fill(PASSWORD)
  await page.getByRole('button', { name: 'Confirm' }).click()
  await page.waitForURL(`${baseUrl}${confirmation}`)
  await expectAccessible(page, 'confirmation')

  await page.getByRole('button', { name: 'Reset second factor' }).click()
  await page.waitForURL(`${baseUrl}/admin/users/${userId}?done=second-factor-reset`)
  expect(await page.getByRole('status').textContent()).toContain('The second factor is removed')
  await expectAccessible(page, '/admin/users/:id after the reset')
  const row = await t.db.selectFrom('users').select('second_factor').where('id', '=', userId).executeTakeFirstOrThrow()
  expect(row.second_factor).toBe(false)
  await context.close()
})

it('confirms with the keyboard alone: Tab to the password, type it, Enter', async () => {
  const page = await loggedInPage(browser, baseUrl, EMAIL, PASSWORD)
  const context = page.context()
  t.clock.advance(11 * 60_000)
  await page.goto(`${baseUrl}/admin/users/${userId}/delete`)
  await page.waitForURL(/\/reauth\?next=/)
  let focused = false
  for (let i = 0; i < 40 && !focused; i++) {
    await page.keyboard.press('Tab')
    focused = (await page.locator('#password:focus').count()) > 0
  }
  expect(focused).toBe(true)
  await page.keyboard.type(PASSWORD)
  await page.keyboard.press('Enter')
  await page.waitForURL(`${baseUrl}/admin/users/${userId}/delete`)
  expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Delete lost-phone@example.com?')
  await context.close()
})
