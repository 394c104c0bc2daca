import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { TestContext } from '../helpers/app.js'
import { buildTestApp } from '../helpers/app.js'
import { BrowserSession } from '../helpers/browser-session.js'
import { axeViolations, closeBrowserTest, startBrowserTest } from '../helpers/browser.js'

/*
 * The Security log in Chromium without JavaScript: reached from the user menu after a failed and
 * a successful log-in, with the events in a table that axe-core finds no WCAG 2.1 A/AA fault in.
 */
let t: TestContext
let browser: Browser
let baseUrl: string
const EMAIL = 'security-log@example.com'
const PASSWORD = 'correct horse battery'

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildTestApp))
  const s = new BrowserSession(t.app)
  await s.signUpAndLogIn(EMAIL, PASSWORD)
  await s.get('/applications/new')
  await s.post('/applications', {
    name: 'Browser <Planner>',
    description: '',
    redirect_uris: 'https://planner.example.com/cb',
    scopes: ['read', 'write_teams'],
  })
})
afterAll(() => closeBrowserTest({ browser, t }))

it('opens the Security log from the user menu and shows the events in an accessible table', async () => {
  const context = await browser.newContext({ javaScriptEnabled: false })
  const page = await context.newPage()
  await page.goto(`${baseUrl}/login`)
  await page.getByLabel('Email').fill(EMAIL)
  await page.getByLabel('Password').fill('not the password')
  await page.getByRole('button', { name: 'Log in' }).click()
  await page.waitForLoadState()
  expect(await page.getByText('Incorrect email or password.').isVisible()).toBe(true)
  await page.getByLabel('Password').fill(PASSWORD)
  await page.getByRole('button', { name: 'Log in' }).click()
  await page.waitForURL(`${baseUrl}/applications`)

  await page.locator('details.user-menu > summary').click()
  await page.getByRole('link', { name: 'Security log' }).click()
  await page.waitForURL(`${baseUrl}/account/security-log`)
  expect(await page.locator('h1').textContent()).toBe('Security log')

  const rows = page.locator('table tbody tr')
  const events = await rows.locator('td:nth-child(2)').allTextContents()
  expect(events.map((e) => e.trim())).toEqual([
    'Logged in',
    'Log-in failed',
    'Application registered',
    'Logged in',
    'Email address verified',
    'Account created',
  ])
  expect(await rows.nth(2).locator('td:nth-child(3)').textContent()).toContain('Browser <Planner>')
  expect(await rows.nth(1).locator('td:nth-child(5)').textContent()).toBe('Wrong password')
  expect(await rows.nth(0).locator('td:nth-child(4)').textContent()).toBe('127.0.0.1')

  expect(await axeViolations(page)).toEqual([])
  await context.close()
})
