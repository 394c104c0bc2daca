import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { type Browser, type BrowserContextOptions, type Page, chromium } from 'playwright-core'
import { expect } from 'vitest'
import type { TestContext } from './app.js'
import { BrowserSession } from './browser-session.js'
import { listenOnLoopback } from './loopback.js'

export { freeLoopbackUrl, listenOnLoopback } from './loopback.js'

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

export interface BrowserTest {
  t: TestContext
  /** The app's PUBLIC_URL, where it listens. */
  baseUrl: string
  browser: Browser
}

/**
 * This worker's Chromium, launched for its first browser test file and kept for the next ones:
 * a launch costs one to two seconds of CPU on these machines. A worker runs its files one after
 * another (vitest.config.ts: `isolate: false`), and each file works in contexts of its own, which
 * closeBrowserTest closes; Playwright ends the browser when the worker exits.
 */
let workerBrowser: Promise<Browser> | undefined

function sharedBrowser(): Promise<Browser> {
  if (!workerBrowser) {
    const launched = launchBrowser()
    workerBrowser = launched
    // A browser that crashed or failed to start is launched again for the next file.
    launched.then(
      (browser) => browser.once('disconnected', () => (workerBrowser = undefined)),
      () => (workerBrowser = undefined),
    )
  }
  return workerBrowser
}

/**
 * A browser test file's start: its own app, built by `build` and listening on loopback
 * (listenOnLoopback, whose `hostname` option it passes on), and the worker's headless Chromium. With
 * `signUp`, that user is then signed up, verified and logged in through the real pages
 * (BrowserSession.signUpAndLogIn), so the browser can log in as them. On failure what was
 * started is closed again; after the tests, closeBrowserTest closes both.
 */
export async function startBrowserTest(
  build: (env: Record<string, string>) => Promise<TestContext>,
  options: { hostname?: 'localhost'; signUp?: { email: string; password: string; operator?: boolean } } = {},
): Promise<BrowserTest> {
  const { t, baseUrl } = await listenOnLoopback(build, { hostname: options.hostname })
  let browser: Browser | undefined
  try {
    browser = await sharedBrowser()
    const signUp = options.signUp
    if (signUp) {
      await new BrowserSession(t.app).signUpAndLogIn(signUp.email, signUp.password)
      // An operator is made on the command line (docs/operating/admin.md); the test marks it directly.
      if (signUp.operator) await t.db.updateTable('users').set({ is_operator: true }).where('email', '=', signUp.email).execute()
    }
    return { t, baseUrl, browser }
  } catch (error) {
    await closeBrowserTest({ t, browser })
    throw error
  }
}

/**
 * Ends a file's use of the browser of startBrowserTest, closing every context it left open but
 * the accessibility check's scratch page, and then closes its app; either may be absent when it
 * never started.
 */
export async function closeBrowserTest(test: { t?: TestContext; browser?: Browser }): Promise<void> {
  if (test.browser?.isConnected()) {
    const scratch = scratchPages.get(test.browser)
    const keep = scratch ? (await scratch.page).context() : undefined
    await Promise.all(
      test.browser
        .contexts()
        .filter((context) => context !== keep)
        .map((context) => context.close()),
    )
  }
  await test.t?.close()
}

/**
 * Fills the log-in form the page shows (GET /login, or where a request was sent to log in)
 * with `email` and `password` and submits it; the caller waits for where that leads. The
 * button's name is matched exactly: the page also offers "Sign in with a passkey".
 */
export async function fillLogIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Log in', exact: true }).click()
}

/** Opens `${baseUrl}/login` and logs in there with the password (fillLogIn). */
export async function logInThroughPage(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await page.goto(`${baseUrl}/login`)
  await fillLogIn(page, email, password)
}

/**
 * A new browser context (no JavaScript unless `options` say so) whose page has logged in with
 * the password and landed on Your Applications, where a log-in without a return address leads.
 */
export async function loggedInPage(
  browser: Browser,
  baseUrl: string,
  email: string,
  password: string,
  options: BrowserContextOptions = { javaScriptEnabled: false },
): Promise<Page> {
  const context = await browser.newContext(options)
  const page = await context.newPage()
  await logInThroughPage(page, baseUrl, email, password)
  await page.waitForURL(`${baseUrl}/applications`)
  return page
}

/**
 * Signs up at `${baseUrl}/signup` and logs in on the log-in page that follows, which has the
 * email filled in already (/login?signed_up=1); the caller waits for where that leads.
 */
export async function signUpAndLogInThroughPage(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await page.goto(`${baseUrl}/signup`)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign up' }).click()
  await page.waitForURL(/\/login\?signed_up=1/)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Log in', exact: true }).click()
}

/**
 * Presses Tab until the focused element matches `selector` (at most 40 times); fails otherwise:
 * how the keyboard-only walks (WCAG 2.1.1) reach a control.
 */
export async function tabTo(page: Page, selector: string): Promise<void> {
  for (let i = 0; i < 40; i++) {
    await page.keyboard.press('Tab')
    if ((await page.locator(`${selector}:focus`).count()) > 0) return
  }
  throw new Error(`Tab never reached ${selector} on ${page.url()}`)
}

/** axe-core's WCAG 2.1 A/AA rule tags. */
const WCAG_21_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']

/**
 * One scratch page per browser that may run scripts, with axe-core loaded into every document
 * it shows, and the checks on it one at a time. A fresh context and axe's 500 kB sent over the
 * DevTools protocol for each check cost about two seconds of a two-core machine, most of a
 * browser test's time; the check itself takes a tenth of that.
 */
const scratchPages = new WeakMap<Browser, { page: Promise<Page>; queue: Promise<unknown> }>()

function scratchFor(browser: Browser) {
  let scratch = scratchPages.get(browser)
  if (!scratch) {
    const source = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
    const page = browser.newContext({ javaScriptEnabled: true }).then(async (context) => {
      await context.addInitScript({ content: source })
      return context.newPage()
    })
    scratch = { page, queue: Promise.resolve() }
    scratchPages.set(browser, scratch)
  }
  return scratch
}

/**
 * The WCAG 2.1 A/AA violations axe-core finds on the page as it is now, as "rule: target"
 * lines (empty when none). The pages are tested with JavaScript off, where axe cannot run, so
 * the page's current HTML is rendered again, with its stylesheets, in the browser's scratch
 * page, which may run scripts.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  // A click on a link returns once the navigation has begun: the next document is then still
  // empty (no title, no lang) until it has loaded.
  await page.waitForLoadState('load')
  const html = (await page.content()).replace(/<head>/i, `<head><base href="${new URL(page.url()).origin}/">`)
  const scratch = scratchFor(page.context().browser()!)
  const check = scratch.queue.then(async () => {
    const copy = await scratch.page
    // The page's own window size: the layout, and so what axe judges, depends on it (a narrow
    // window's scrolled tables, for one).
    await copy.setViewportSize(page.viewportSize() ?? { width: 1280, height: 720 })
    await copy.goto('about:blank')
    await copy.setContent(html, { waitUntil: 'load' })
    const result = (await copy.evaluate(`axe.run(document, { runOnly: { type: 'tag', values: ${JSON.stringify(WCAG_21_AA)} } })`)) as {
      violations: Array<{ id: string; nodes: Array<{ target: unknown[] }> }>
    }
    return result.violations.flatMap((v) => v.nodes.map((n) => `${v.id}: ${JSON.stringify(n.target)}`))
  })
  scratch.queue = check.catch(() => undefined)
  return check
}

/** Asserts the page as it is now has no WCAG 2.1 A/AA violation, naming the state and URL when it does. */
export async function expectAccessible(page: Page, state: string): Promise<void> {
  expect(await axeViolations(page), `${state}: ${page.url()}`).toEqual([])
}
