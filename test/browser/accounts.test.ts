import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { buildTestApp, type TestContext } from '../helpers/app.js'
import { closeBrowserTest, expectAccessible, signUpAndLogInThroughPage, startBrowserTest } from '../helpers/browser.js'
import { linkTo } from '../helpers/mailbox.js'

/*
 * The account pages in Chromium without JavaScript (docs/accounts.md "Your account"): the whole path a developer takes,
 * sign-up → verification link → an application → log out → forgot password → reset → log in
 * with the new password, with axe-core's WCAG 2.1 A/AA check on every page in every state it
 * passes through (empty form, form with errors, success); then the Account pages likewise.
 */

let t: TestContext
let browser: Browser
let baseUrl: string
const EMAIL = 'walker@example.com'

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildTestApp))
})
afterAll(() => closeBrowserTest({ browser, t }))

/** The link to `path` in the newest mail to `to`, absolute. */
function mailedLink(to: string, path: string): string {
  const link = linkTo(t.mailbox.last(to), path)
  if (!link) throw new Error(`no ${path} link mailed to ${to}`)
  return `${baseUrl}${link}`
}

it('sign-up → verification link → application → log out → forgot password → reset → log in', async () => {
  const context = await browser.newContext({ javaScriptEnabled: false })
  const page = await context.newPage()

  await page.goto(`${baseUrl}/`)
  await expectAccessible(page, 'home')
  await page.getByRole('link', { name: 'Create a free account' }).click()
  await expectAccessible(page, 'sign-up, empty')
  await page.getByLabel('Email').fill(EMAIL)
  await page.getByLabel('Password').fill('password1')
  await page.getByRole('button', { name: 'Sign up' }).click()
  expect(await page.locator('#password-error').textContent()).toContain('one of the most common passwords')
  await expectAccessible(page, 'sign-up, with errors')
  await page.getByLabel('Password').fill('first walk password')
  await page.getByRole('button', { name: 'Sign up' }).click()
  await page.waitForURL(/\/login\?signed_up=1/)
  await expectAccessible(page, 'log-in after sign-up')

  await page.getByLabel('Password').fill('first walk password')
  await page.getByRole('button', { name: 'Log in' }).click()
  await page.waitForURL(`${baseUrl}/applications`)
  expect(await page.getByText('Verify your email address').isVisible()).toBe(true)
  await expectAccessible(page, 'Your Applications, unverified')
  await page.getByRole('button', { name: 'Resend verification email' }).click()
  await page.waitForURL(/verification=sent/)
  await expectAccessible(page, 'Your Applications, verification resent')

  await page.goto(mailedLink(EMAIL, '/verify-email'))
  await expectAccessible(page, 'verify email')
  await page.getByRole('button', { name: 'Verify my email address' }).click()
  await page.waitForURL(`${baseUrl}/applications?verified=1`)
  await expectAccessible(page, 'Your Applications, just verified')

  await page.getByRole('link', { name: 'New application' }).click()
  await expectAccessible(page, 'new application, empty')
  await page.getByLabel('Application name').fill('Walk Planner')
  await page.getByRole('textbox', { name: /^Redirect URIs/ }).fill('https://planner.example.com/cb')
  await page.getByRole('button', { name: 'Register application' }).click()
  await page.waitForLoadState()
  expect((await page.locator('#client-secret').textContent())?.trim()).toMatch(/^gcs_/)
  await expectAccessible(page, 'application, created')

  await page.locator('details.user-menu > summary').click()
  await page.getByRole('button', { name: 'Log out' }).click()
  await page.waitForURL(`${baseUrl}/login`)

  await page.getByRole('link', { name: 'Forgot your password?' }).click()
  await expectAccessible(page, 'forgot password, empty')
  await page.getByLabel('Email').fill('not an email')
  await page.getByRole('button', { name: 'Send reset link' }).click()
  await expectAccessible(page, 'forgot password, with errors')
  await page.getByLabel('Email').fill(EMAIL)
  await page.getByRole('button', { name: 'Send reset link' }).click()
  expect(await page.getByText('we sent it a link').isVisible()).toBe(true)
  await expectAccessible(page, 'forgot password, sent')

  const reset = mailedLink(EMAIL, '/reset-password')
  await page.goto(reset)
  await expectAccessible(page, 'reset password, empty')
  await page.getByLabel('New password').fill('qwerty123')
  await page.getByRole('button', { name: 'Set new password' }).click()
  await expectAccessible(page, 'reset password, with errors')
  await page.getByLabel('New password').fill('second walk password')
  await page.getByRole('button', { name: 'Set new password' }).click()
  await page.waitForURL(/\/login\?reset=1/)
  await expectAccessible(page, 'log-in after reset')

  // The used link is dead now.
  await page.goto(reset)
  expect(await page.locator('h1').textContent()).toBe('Choose a new password')
  expect(await page.getByText('expired or has already been used').isVisible()).toBe(true)
  await expectAccessible(page, 'dead link')

  await page.goto(`${baseUrl}/login`)
  await page.getByLabel('Email').fill(EMAIL)
  await page.getByLabel('Password').fill('first walk password')
  await page.getByRole('button', { name: 'Log in' }).click()
  expect(await page.getByText('Incorrect email or password.').isVisible()).toBe(true)
  await expectAccessible(page, 'log-in, with errors')
  await page.getByLabel('Password').fill('second walk password')
  await page.getByRole('button', { name: 'Log in' }).click()
  await page.waitForURL(`${baseUrl}/applications`)
  expect(await page.getByRole('link', { name: 'Walk Planner' }).isVisible()).toBe(true)
  await context.close()
}, 120_000)

it('the Account pages, in each state, have no WCAG 2.1 A/AA violation', async () => {
  const context = await browser.newContext({ javaScriptEnabled: false })
  const page = await context.newPage()
  const email = 'settings-walker@example.com'
  await signUpAndLogInThroughPage(page, baseUrl, email, 'settings walk password')
  await page.waitForURL(`${baseUrl}/applications`)

  await page.goto(`${baseUrl}/applications/new`)
  expect(await page.locator('h1').textContent()).toBe('Verify your email address first')
  await expectAccessible(page, 'new application while unverified')

  await page.locator('details.user-menu > summary').click()
  await page.getByRole('link', { name: 'Account' }).click()
  await page.waitForURL(`${baseUrl}/account`)
  await expectAccessible(page, 'Account, unverified')

  await page.getByRole('link', { name: 'Change password' }).click()
  await expectAccessible(page, 'change password, empty')
  await page.getByLabel('Current password').fill('wrong password here')
  await page.getByLabel('New password').fill('abc')
  await page.getByRole('button', { name: 'Change password' }).click()
  await expectAccessible(page, 'change password, with errors')
  await page.getByLabel('Current password').fill('settings walk password')
  await page.getByLabel('New password').fill('settings walk password 2')
  await page.getByRole('button', { name: 'Change password' }).click()
  await page.waitForURL(`${baseUrl}/account?password_changed=1`)
  await expectAccessible(page, 'Account, password changed')

  // A change asked and cancelled from the link mailed to the old address.
  await page.getByRole('link', { name: 'Change email' }).click()
  await page.getByLabel('New email address').fill('settings-cancelled@example.com')
  await page.getByLabel('Current password').fill('settings walk password 2')
  await page.getByRole('button', { name: 'Send confirmation link' }).click()
  await page.goto(mailedLink(email, '/cancel-email-change'))
  await expectAccessible(page, 'cancel email change')
  await page.getByRole('button', { name: 'Cancel the change' }).click()
  expect(await page.locator('h1').textContent()).toBe('Change of address cancelled')
  await expectAccessible(page, 'email change cancelled')
  await page.goto(mailedLink('settings-cancelled@example.com', '/confirm-email'))
  expect(await page.locator('.error-message').textContent()).toContain('has already been used')

  await page.goto(`${baseUrl}/account`)
  await page.getByRole('link', { name: 'Change email' }).click()
  await expectAccessible(page, 'change email, empty')
  await page.getByLabel('New email address').fill('nope')
  await page.getByLabel('Current password').fill('settings walk password 2')
  await page.getByRole('button', { name: 'Send confirmation link' }).click()
  await expectAccessible(page, 'change email, with errors')
  await page.getByLabel('New email address').fill('settings-moved@example.com')
  await page.getByLabel('Current password').fill('settings walk password 2')
  await page.getByRole('button', { name: 'Send confirmation link' }).click()
  expect(await page.getByText('We sent a link to').isVisible()).toBe(true)
  await expectAccessible(page, 'change email, sent')
  await page.goto(mailedLink('settings-moved@example.com', '/confirm-email'))
  await expectAccessible(page, 'confirm email')
  await page.getByRole('button', { name: 'Use this address' }).click()
  await page.waitForURL(`${baseUrl}/account?email_changed=1`)
  expect(await page.getByText('settings-moved@example.com').first().isVisible()).toBe(true)
  await expectAccessible(page, 'Account, verified, email changed')

  await page.goto(`${baseUrl}/account`)
  // The field's maxlength stops a browser at 100 characters; the server refuses more anyway.
  await page.evaluate(() => document.querySelector('#display_name')?.removeAttribute('maxlength'))
  await page.getByLabel(/^Display name/).fill('x'.repeat(101))
  await page.getByRole('button', { name: 'Save display name' }).click()
  await expectAccessible(page, 'Account, display name refused')
  await page.getByLabel(/^Display name/).fill('Settings Walker')
  await page.getByRole('button', { name: 'Save display name' }).click()
  await page.waitForURL(`${baseUrl}/account?profile_saved=1`)
  await expectAccessible(page, 'Account, display name saved')

  await page.goto(`${baseUrl}/account/sessions`)
  expect(await page.getByText('(this browser)').isVisible()).toBe(true)
  await expectAccessible(page, 'active sessions')
  await page.getByRole('button', { name: 'Log out of all other sessions' }).click()
  await page.waitForURL(`${baseUrl}/account?sessions_ended=1`)

  await page.goto(`${baseUrl}/authorized-applications`)
  await expectAccessible(page, 'Authorized Applications')
  await page.goto(`${baseUrl}/no/such/page`)
  await expectAccessible(page, 'not found')

  await page.goto(`${baseUrl}/account/delete`)
  await expectAccessible(page, 'delete account, empty')
  await page.getByLabel('Your password').fill('not the password')
  await page.getByRole('button', { name: 'Delete my account' }).click()
  await expectAccessible(page, 'delete account, with errors')
  await page.getByLabel('Your password').fill('settings walk password 2')
  await page.getByRole('button', { name: 'Delete my account' }).click()
  await page.waitForURL(`${baseUrl}/?account_deleted=1`)
  await expectAccessible(page, 'home after deletion')
  await context.close()
}, 120_000)

it('the pages of the first proof elsewhere, of factors before verification, of passkeys at an IP address and of an email change before logging in', async () => {
  const email = 'second-walker@example.com'
  const page = await (await browser.newContext({ javaScriptEnabled: false })).newPage()
  await signUpAndLogInThroughPage(page, baseUrl, email, 'second walk password')
  await page.waitForURL(`${baseUrl}/applications`)
  // No factor before the address is verified (docs/accounts.md "Two-factor authentication").
  await page.goto(`${baseUrl}/account/two-factor`)
  expect(await page.getByRole('button', { name: 'Resend verification email' }).isVisible()).toBe(true)
  await expectAccessible(page, 'two-factor, unverified')
  // This app listens at 127.0.0.1, where browsers refuse passkeys (docs/accounts.md "Passkeys").
  await page.goto(`${baseUrl}/account/passkeys`)
  expect(await page.getByText('IP address').first().isVisible()).toBe(true)
  await expectAccessible(page, 'passkeys at an IP address')

  // The verification link opened without the account's session asks for a new password.
  const elsewhere = await (await browser.newContext({ javaScriptEnabled: false })).newPage()
  await elsewhere.goto(mailedLink(email, '/verify-email'))
  await expectAccessible(elsewhere, 'verify email, choose a password')
  await elsewhere.getByLabel('New password').fill('password123')
  await elsewhere.getByRole('button', { name: 'Verify and set the password' }).click()
  expect(await elsewhere.locator('#password-error').isVisible()).toBe(true)
  await expectAccessible(elsewhere, 'verify email, choose a password, with errors')
  await elsewhere.getByLabel('New password').fill('second walk password 2')
  await elsewhere.getByRole('button', { name: 'Verify and set the password' }).click()
  await elsewhere.waitForURL(`${baseUrl}/login?verified=1`)

  // An email change's link opened without a session names no account and asks to log in.
  await page.goto(`${baseUrl}/login`)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill('second walk password 2')
  await page.getByRole('button', { name: 'Log in', exact: true }).click()
  await page.waitForURL(`${baseUrl}/applications`)
  await page.goto(`${baseUrl}/account/email`)
  await page.getByLabel('New email address').fill('second-walker-moved@example.com')
  await page.getByLabel('Current password').fill('second walk password 2')
  await page.getByRole('button', { name: 'Send confirmation link' }).click()
  await elsewhere.goto(mailedLink('second-walker-moved@example.com', '/confirm-email'))
  expect(await elsewhere.getByRole('link', { name: 'Log in to confirm' }).isVisible()).toBe(true)
  expect(await elsewhere.content()).not.toContain(email)
  await expectAccessible(elsewhere, 'confirm email, not logged in')
})
