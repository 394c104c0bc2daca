import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { sha256Hex } from '../../src/lib/crypto.js'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../helpers/app.js'
import { BrowserSession } from '../helpers/browser-session.js'
import { closeBrowserTest, expectAccessible, logInThroughPage, startBrowserTest } from '../helpers/browser.js'
import { createApplication } from '../helpers/factories.js'

/*
 * The pictures in the docs (docs/screenshots/*.png), taken from the real pages in Chromium so they
 * stay current: consent, the console's application list, an application's page, account security
 * and the admin dashboard, at a fixed window size with fixed names, addresses, identifiers and
 * clock. `npm run docs:screenshots` (UPDATE_SCREENSHOTS=1) writes them; otherwise each page is
 * still rendered, checked by axe and shot, and each committed picture must be a PNG of that size,
 * so a test run never rewrites a tracked file.
 */
const SHOTS_DIR = join(import.meta.dirname, '..', '..', 'docs', 'screenshots')
const UPDATE = process.env.UPDATE_SCREENSHOTS === '1'
const VIEWPORT = { width: 1200, height: 800 }
const NOW = new Date('2026-03-02T09:30:00Z')
const EMAIL = 'dana@example.com'
const PASSWORD = 'correct horse battery'

let t: TestContext
let browser: Browser
let baseUrl: string
let page: Page
let planner: { id: string; clientId: string }

beforeAll(async () => {
  ;({ t, baseUrl, browser } = await startBrowserTest(buildTestApp))
  t.clock.set(NOW)
  await new BrowserSession(t.app).signUpAndLogIn(EMAIL, PASSWORD)
  const dana = await t.db
    .updateTable('users')
    .set({ is_operator: true })
    .where('email', '=', EMAIL)
    .returning('id')
    .executeTakeFirstOrThrow()
  planner = await fixedApplication(dana.id, 'Team Planner', 'tp_4Xq9c2Lm7RzV1nK8sWb3Yd0E')
  await fixedApplication(dana.id, 'Match Reporter', 'mr_8Hj2Vw5Tq1Lz9Nc4Kx7Pa3Sg')
  await aWeekOfActivity(dana.id, planner.id)
  const context = await browser.newContext({ javaScriptEnabled: false, viewport: VIEWPORT, deviceScaleFactor: 1 })
  page = await context.newPage()
  await logInThroughPage(page, baseUrl, EMAIL, PASSWORD)
  await page.waitForURL(`${baseUrl}/applications`)
})
afterAll(() => closeBrowserTest({ browser, t }))

/** An application of Dana's with a fixed client ID, verified by the operator, created at NOW. */
async function fixedApplication(ownerId: string, name: string, clientId: string) {
  const app = await createApplication(t.db, {
    ownerId,
    name,
    now: NOW,
    redirectUris: [`https://${name.toLowerCase().replace(' ', '-')}.example.com/oauth/callback`],
    scopes: ['openid', 'email', 'profile', 'read', 'write_teams', 'write_events'],
  })
  await t.db
    .updateTable('applications')
    .set({ client_id: clientId, verified_at: NOW, homepage_url: `https://${name.toLowerCase().replace(' ', '-')}.example.com` })
    .where('id', '=', app.id)
    .execute()
  return { id: app.id, clientId }
}

/**
 * What the dashboard draws: a week of sign-ins, failed log-ins and tokens, busier in the day
 * (UTC) than at night, from a fixed formula so the picture is the same on every run.
 */
async function aWeekOfActivity(userId: string, applicationId: string) {
  const events: Array<{ occurred_at: Date; event: string; user_id: string }> = []
  const tokens: Array<{
    token_hash: string
    application_id: string
    user_id: string
    scopes: string[]
    created_at: Date
    revoked_at: Date | null
  }> = []
  for (let hour = 1; hour < 7 * 24; hour++) {
    const at = new Date(NOW.getTime() - hour * 3600_000)
    const daytime = at.getUTCHours() >= 7 && at.getUTCHours() < 20
    const busy = (daytime ? 6 : 1) + ((hour * 7) % 5)
    for (let i = 0; i < busy; i++) events.push({ occurred_at: new Date(at.getTime() + i * 1000), event: 'user.logged_in', user_id: userId })
    for (let i = 0; i < (hour * 5) % 3; i++) events.push({ occurred_at: at, event: 'user.login_failed', user_id: userId })
    for (let i = 0; i < busy * 2; i++) {
      const revoked = (hour + i) % 9 === 0 ? new Date(at.getTime() + 60_000) : null
      tokens.push({
        token_hash: sha256Hex(`docs-${hour}-${i}`),
        application_id: applicationId,
        user_id: userId,
        scopes: ['read'],
        created_at: at,
        revoked_at: revoked,
      })
    }
  }
  await t.db.insertInto('audit_events').values(events).execute()
  await t.db.insertInto('access_tokens').values(tokens).execute()
}

/** The width and height a PNG's IHDR chunk names (PNG specification 11.2.2), or undefined when it is no PNG. */
function pngSize(bytes: Buffer): { width: number; height: number } | undefined {
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  if (bytes.length < 24 || !bytes.subarray(0, 8).equals(signature) || bytes.toString('latin1', 12, 16) !== 'IHDR') return undefined
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) }
}

const SHOTS: Array<[name: string, path: () => string, heading: string]> = [
  [
    'consent',
    () =>
      `/oauth/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: planner.clientId,
        redirect_uri: 'https://team-planner.example.com/oauth/callback',
        scope: 'openid profile read write_teams',
        state: 'docs',
      })}`,
    'Authorize Team Planner',
  ],
  ['console', () => '/applications', 'Your Applications'],
  ['application', () => `/applications/${planner.id}`, 'Team Planner'],
  ['account-security', () => '/account/two-factor', 'Two-factor authentication'],
  ['admin', () => '/admin', 'Operator'],
]

it.each(SHOTS)('%s: renders, passes axe, and its picture in docs/screenshots is a PNG of the window size', async (name, path, heading) => {
  const response = await page.goto(`${baseUrl}${path()}`)
  expect(response?.status()).toBe(200)
  expect(await page.locator('h1').first().textContent()).toContain(heading)
  await expectAccessible(page, name)
  const shot = await page.screenshot({ type: 'png' })
  expect(pngSize(shot)).toEqual(VIEWPORT)
  const file = join(SHOTS_DIR, `${name}.png`)
  if (UPDATE) {
    mkdirSync(SHOTS_DIR, { recursive: true })
    writeFileSync(file, shot)
  }
  expect(existsSync(file), `${file} is missing: run npm run docs:screenshots`).toBe(true)
  expect(pngSize(readFileSync(file))).toEqual(VIEWPORT)
})
