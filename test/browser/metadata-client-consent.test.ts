import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { axeViolations, closeBrowserTest, fillLogIn, startBrowserTest } from '../helpers/browser.js'
import type { TestContext } from '../helpers/app.js'
import { type DocumentServer, startDocumentServer } from '../helpers/metadata-document-server.js'
import { CHALLENGE, buildOAuthTestApp } from '../integration/oauth/helpers.js'

/*
 * The consent page of a client without registration (docs/agents.md) in Chromium without
 * JavaScript: the not-registered notice and the redirect host are on the page, axe-core finds no
 * WCAG 2.1 A/AA fault, and Authorize lands on the loopback redirect URI its document lists.
 */
let t: TestContext
let browser: Browser
let baseUrl: string
let docs: DocumentServer
const EMAIL = 'metadata-consent@example.com'
const PASSWORD = 'correct horse battery'
const REDIRECT = 'http://127.0.0.1:53690/callback'

beforeAll(async () => {
  docs = await startDocumentServer()
  const env = {
    CLIENT_ID_METADATA_DOCUMENTS: 'true',
    CLIENT_ID_METADATA_ALLOW_PRIVATE_ADDRESSES: 'true',
    CLIENT_ID_METADATA_EXTRA_CA_FILE: docs.caFile!,
  }
  ;({ t, baseUrl, browser } = await startBrowserTest((e) => buildOAuthTestApp({ ...env, ...e }), {
    signUp: { email: EMAIL, password: PASSWORD },
  }))
})
afterAll(async () => {
  await closeBrowserTest({ browser, t })
  await docs?.close()
})

it('says the client is not registered, passes axe, and approves to its loopback redirect', async () => {
  const clientId = docs.document('/assistant.json', { client_name: 'Pocket Assistant', redirect_uris: [REDIRECT] })
  const context = await browser.newContext({ javaScriptEnabled: false })
  await context.route('http://127.0.0.1:53690/**', (route) =>
    route.fulfill({ status: 200, contentType: 'text/html', body: '<p>client</p>' }),
  )
  const page = await context.newPage()
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    scope: 'read',
    state: 's-1',
    code_challenge: CHALLENGE,
    code_challenge_method: 'S256',
  })
  await page.goto(`${baseUrl}/oauth/authorize?${query}`)
  await page.waitForURL(/\/login\?next=/)
  await fillLogIn(page, EMAIL, PASSWORD)
  await page.waitForURL(/\/oauth\/authorize\?/)
  expect(await page.locator('h1').textContent()).toBe('Authorize Pocket Assistant')
  const notice = await page.locator('#unregistered-client').textContent()
  expect(notice).toContain(
    `Pocket Assistant is not registered with Gatehouse: its identity is only the web address ${new URL(clientId).host}.`,
  )
  expect(await page.getByText('127.0.0.1:53690').isVisible()).toBe(true)
  expect(await axeViolations(page)).toEqual([])
  await page.getByRole('button', { name: 'Authorize' }).click()
  await page.waitForURL(/^http:\/\/127\.0\.0\.1:53690\/callback\?/)
  const callback = new URL(page.url())
  expect(callback.searchParams.get('state')).toBe('s-1')
  expect(callback.searchParams.get('code')).toBeTruthy()
})
