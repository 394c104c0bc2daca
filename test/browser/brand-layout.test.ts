import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../helpers/app.js'
import { BRAND_LOGO_FIXTURE } from '../helpers/brand.js'
import { closeBrowserTest, expectAccessible, loggedInPage, startBrowserTest, tabTo } from '../helpers/browser.js'
import { createApplication, createUser } from '../helpers/factories.js'

/*
 * The pages a team shows its customers, in Chromium (docs/operating/branding.md): the operator's
 * logo, whose SVG script never runs; copy buttons for the client ID and secret that only a page
 * with scripts shows, usable by keyboard and announced; table pages the window's width with times
 * on one line, and in a phone-sized window tables that scroll inside a labelled region, not the
 * page. axe-core finds no WCAG 2.1 A/AA fault on any of them.
 */
let t: TestContext
let browser: Browser
let baseUrl: string
const EMAIL = 'operator@example.com'
const PASSWORD = 'correct horse battery'

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(
    (env) => buildTestApp({ ...env, SERVICE_NAME: 'Acme ID', BRAND_ACCENT_COLOR: '#1f6f43', BRAND_LOGO_FILE: BRAND_LOGO_FIXTURE }),
    { signUp: { email: EMAIL, password: PASSWORD, operator: true } },
  ))
  // Enough rows, with long identifiers, that the admin tables are wider than a phone.
  for (let i = 0; i < 3; i++) {
    const owner = await createUser(t.db, { email: `a-rather-long-developer-address-${i}@subdomain.example.com` })
    await createApplication(t.db, { ownerId: owner.id, name: `Planner ${i}` })
  }
})
afterAll(() => closeBrowserTest({ browser, t }))

function loggedIn(options: { javaScriptEnabled: boolean; viewport?: { width: number; height: number } }): Promise<Page> {
  return loggedInPage(browser, baseUrl, EMAIL, PASSWORD, options)
}

/** Registers an application through the console; returns the Content-Security-Policy of the page showing its secret. */
async function registerApplication(page: Page): Promise<string> {
  await page.goto(`${baseUrl}/applications/new`)
  await page.getByLabel('Application name').fill('Copy Planner')
  await page.getByRole('textbox', { name: /^Redirect URIs/ }).fill('https://planner.example.com/cb')
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST'),
    page.getByRole('button', { name: 'Register application' }).click(),
  ])
  await page.waitForLoadState()
  return response.headers()['content-security-policy'] ?? ''
}

const text = async (page: Page, selector: string) => ((await page.locator(selector).textContent()) ?? '').trim()

describe('the logo', () => {
  it('heads the page beside the name, and its SVG script never runs, in the page or opened alone', async () => {
    const page = await (await browser.newContext({ javaScriptEnabled: true })).newPage()
    await page.goto(`${baseUrl}/login`)
    const logo = page.locator('header img.brand-logo')
    expect(await logo.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true)
    expect(await page.getByRole('link', { name: 'Acme ID' }).count()).toBe(1)
    expect(await page.title()).toBe('Log in · Acme ID')
    await page.goto(`${baseUrl}/static/brand-logo`)
    expect(await page.evaluate(() => document.title)).not.toBe('script ran')
  })
})

describe('copy buttons', () => {
  it('copy the client ID and the new secret, by mouse and by keyboard, and say so', async () => {
    const page = await loggedIn({ javaScriptEnabled: true })
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl })
    const csp = await registerApplication(page)
    const clientId = await text(page, '#client-id')
    const secret = await text(page, '#client-secret')
    expect(secret).toMatch(/^gcs_/)
    expect(csp).toMatch(new RegExp(`script-src ${baseUrl}/static/copy\\.js(;|$)`))

    await page.getByRole('button', { name: 'Copy client ID' }).click()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(clientId)
    expect(await page.getByRole('status').filter({ hasText: 'copied' }).textContent()).toBe('Client ID copied')

    await tabTo(page, 'button[data-copy="client-secret"]')
    await page.keyboard.press('Enter')
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret)
    expect(await text(page, '#copy-status')).toBe('Client secret copied')
    await expectAccessible(page, 'application page with copy buttons')
    await page.context().close()
  })

  it('stay hidden without JavaScript, where the values are plain text and the page is whole', async () => {
    const page = await loggedIn({ javaScriptEnabled: false })
    await registerApplication(page)
    expect(await text(page, '#client-id')).toMatch(/^[A-Za-z0-9_-]{24}$/)
    expect(await text(page, '#client-secret')).toMatch(/^gcs_/)
    expect(await page.getByRole('button', { name: /^Copy/ }).count()).toBe(0)
    expect(await page.locator('button[data-copy]').count()).toBe(2)
    await expectAccessible(page, 'application page without scripts')
    await page.context().close()
  })

  it('are allowed on the application page only: other pages keep script-src none', async () => {
    const page = await loggedIn({ javaScriptEnabled: false })
    const res = await page.goto(`${baseUrl}/applications`)
    expect(res?.headers()['content-security-policy']).toMatch(/script-src 'none'/)
    await page.context().close()
  })
})

describe('table pages', () => {
  it('use the width of a wide window, with every time on one line', async () => {
    const page = await loggedIn({ javaScriptEnabled: false, viewport: { width: 1400, height: 900 } })
    await page.goto(`${baseUrl}/admin/audit`)
    const main = await page.locator('main').boundingBox()
    expect(main!.width).toBeGreaterThan(1200)
    const times = page.locator('table time')
    expect(await times.count()).toBeGreaterThan(0)
    const lines = await times.evaluateAll((els) => els.map((el) => el.getClientRects().length))
    expect(lines.every((n) => n === 1)).toBe(true)
    await expectAccessible(page, '/admin/audit, wide')
    await page.context().close()
  })

  it('scroll their tables inside a labelled, focusable region on a phone, not the page', async () => {
    const page = await loggedIn({ javaScriptEnabled: false, viewport: { width: 375, height: 740 } })
    for (const path of ['/admin/audit', '/admin/users', '/admin/applications', '/account/security-log', '/applications']) {
      await page.goto(`${baseUrl}${path}`)
      const region = page.locator('.table-scroll')
      expect(await region.getAttribute('role'), path).toBe('region')
      expect(await region.getAttribute('tabindex'), path).toBe('0')
      expect(await region.evaluate((el) => el.scrollWidth > el.clientWidth), path).toBe(true)
      expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), path).toBe(true)
      await expectAccessible(page, `${path}, phone`)
    }
    await page.context().close()
  })
})
