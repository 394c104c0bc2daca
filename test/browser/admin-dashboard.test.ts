import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { TestContext } from '../helpers/app.js'
import { buildTestApp } from '../helpers/app.js'
import { closeBrowserTest, expectAccessible, logInThroughPage, startBrowserTest, tabTo } from '../helpers/browser.js'
import { createAccessToken, createApplication, createUser } from '../helpers/factories.js'

/*
 * /admin's dashboard in Chromium without JavaScript (docs/operating/admin.md "The dashboard"): each
 * chart an image named in words with its total as text, every count in a table the keyboard
 * opens, no WCAG 2.1 A/AA fault, no sideways scrolling on a phone, and bars still drawn, in the
 * text's colour, when the stylesheet does not load.
 */
let t: TestContext
let browser: Browser
let baseUrl: string
const EMAIL = 'operator@example.com'
const PASSWORD = 'correct horse battery'

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildTestApp, { signUp: { email: EMAIL, password: PASSWORD, operator: true } }))
  // Ten past the next of 00:00, 06:00, 12:00, 18:00 UTC: the current hour, the charts' last bar, is then named under it, at the edge.
  const SIX_HOURS = 6 * 3_600_000
  t.clock.set(new Date((Math.floor(t.clock().getTime() / SIX_HOURS) + 1) * SIX_HOURS + 10 * 60_000))
  const owner = await createUser(t.db)
  const app = await createApplication(t.db, { ownerId: owner.id })
  for (let i = 0; i < 3; i++) await createAccessToken(t.db, { userId: owner.id, applicationId: app.id, now: t.clock() })
})
afterAll(() => closeBrowserTest({ browser, t }))

async function dashboard(options: { width: number; withoutStylesheet?: boolean }): Promise<Page> {
  const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: options.width, height: 900 } })
  if (options.withoutStylesheet) await context.route('**/static/app.css', (route) => route.abort())
  const page = await context.newPage()
  await logInThroughPage(page, baseUrl, EMAIL, PASSWORD)
  await page.waitForURL(`${baseUrl}/applications`)
  await page.goto(`${baseUrl}/admin`)
  return page
}

it('names each chart, gives its total as text and every count in a table the keyboard opens; axe finds nothing', async () => {
  const page = await dashboard({ width: 1280 })
  const chart = page.getByRole('img', { name: 'Tokens issued per hour, last 24 hours' })
  await expect(chart.isVisible()).resolves.toBe(true)
  expect(await chart.getAttribute('aria-describedby')).toBe('chart-last-24-hours-tokensIssued-desc')
  expect(await page.locator('#last-24-hours-tokensIssued-total').textContent()).toBe('3')
  expect(await page.getByRole('img').count()).toBe(10)
  await expectAccessible(page, '/admin')

  const table = page.locator('#last-24-hours-table')
  expect(await table.isVisible()).toBe(false)
  await tabTo(page, '#last-24-hours ~ details > summary')
  await page.keyboard.press('Enter')
  expect(await table.isVisible()).toBe(true)
  expect(await table.locator('tfoot td').allTextContents()).toEqual(['2', '0', '3', '0', '0'])
  await expectAccessible(page, '/admin with the table open')
  await page.context().close()
})

it('fits a phone: the charts shrink to the column, nothing scrolls sideways', async () => {
  const page = await dashboard({ width: 360 })
  const widths = await page.locator('svg.bar-chart').evaluateAll((svgs) => svgs.map((s) => s.getBoundingClientRect().width))
  for (const width of widths) expect(width).toBeLessThanOrEqual(360)
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360)
  // Every word of every chart inside its drawing, none cut at an edge.
  const outside = await page
    .locator('svg.bar-chart text')
    .evaluateAll((texts) =>
      texts
        .map((text) => ({ box: (text as SVGGraphicsElement).getBBox(), text: text.textContent }))
        .filter(({ box }) => box.x < 0 || box.y < 0 || box.x + box.width > 360 || box.y + box.height > 150),
    )
  expect(outside).toEqual([])
  await page.context().close()
})

it('still draws the bars, in the text colour, at their own size when the stylesheet does not load', async () => {
  const page = await dashboard({ width: 1280, withoutStylesheet: true })
  const chart = page.getByRole('img', { name: 'Tokens issued per hour, last 24 hours' })
  const box = await chart.boundingBox()
  expect([box?.width, box?.height]).toEqual([360, 150])
  const bar = chart.locator('rect.bar')
  expect(await bar.count()).toBe(1)
  const text = await page.evaluate(() => getComputedStyle(document.body).color)
  // Outlined in the text's colour and filled with its pattern; the sign-ins' bars are solid in it.
  expect(await bar.evaluate((rect) => [getComputedStyle(rect).stroke, getComputedStyle(rect).fill])).toEqual([
    text,
    'url("#chart-last-24-hours-tokensIssued-fill")',
  ])
  const signIns = page.getByRole('img', { name: 'Sign-ins per hour, last 24 hours' }).locator('rect.bar').first()
  expect(await signIns.evaluate((rect) => getComputedStyle(rect).fill)).toBe(text)
  await page.context().close()
})
