import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { type AddressInfo, createServer } from 'node:net'
import { type Browser, type Page, chromium } from 'playwright-core'
import type { TestContext } from './app.js'
import { expect } from 'vitest'

/*
 * Headless Chromium for browser tests: Debian's `chromium` package (`.ci/run` installs it with
 * apt-get when missing), driven by playwright-core; no browser download.
 */
export const CHROMIUM_PATH = '/usr/bin/chromium'

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
}

/**
 * `http://127.0.0.1:<a free port>`, to be the PUBLIC_URL of an app that then listens there with
 * listenOnLoopback. Pages refuse a form whose Origin is not PUBLIC_URL's origin
 * (src/http/page-security.ts), and Chromium sends the origin it loaded the page from, so a browser
 * test's app must know its own address before it is built.
 */
export async function freeLoopbackUrl(): Promise<string> {
  const probe = createServer()
  await new Promise<void>((resolve, reject) => probe.once('error', reject).listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return `http://127.0.0.1:${port}`
}

/** axe-core's WCAG 2.1 A/AA rule tags. */
const WCAG_21_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']

/**
 * The WCAG 2.1 A/AA violations axe-core finds on the page as it is now, as "rule: target"
 * lines (empty when none). The pages are tested with JavaScript off, where axe cannot run, so
 * the page's current HTML is rendered again, with its stylesheets, in a scratch page that
 * may run scripts.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  const source = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
  const html = (await page.content()).replace(/<head>/i, `<head><base href="${new URL(page.url()).origin}/">`)
  const scratch = await page.context().browser()!.newContext({ javaScriptEnabled: true })
  try {
    const copy = await scratch.newPage()
    await copy.setContent(html, { waitUntil: 'load' })
    await copy.addScriptTag({ content: source })
    const result = (await copy.evaluate(`axe.run(document, { runOnly: { type: 'tag', values: ${JSON.stringify(WCAG_21_AA)} } })`)) as {
      violations: Array<{ id: string; nodes: Array<{ target: unknown[] }> }>
    }
    return result.violations.flatMap((v) => v.nodes.map((n) => `${v.id}: ${JSON.stringify(n.target)}`))
  } finally {
    await scratch.close()
  }
}

/** Asserts the page as it is now has no WCAG 2.1 A/AA violation, naming the state and URL when it does. */
export async function expectAccessible(page: Page, state: string): Promise<void> {
  expect(await axeViolations(page), `${state}: ${page.url()}`).toEqual([])
}

/** Builds the app with PUBLIC_URL on a free loopback port and listens there; returns that URL. */
export async function listenOnLoopback(
  build: (env: Record<string, string>) => Promise<TestContext>,
): Promise<{ t: TestContext; baseUrl: string }> {
  const baseUrl = await freeLoopbackUrl()
  const t = await build({ PUBLIC_URL: baseUrl })
  await t.app.listen({ port: Number(new URL(baseUrl).port), host: '127.0.0.1' })
  return { t, baseUrl }
}
