import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { axeViolations, launchBrowser } from '../helpers/browser.js'

/*
 * The accessibility check every browser test relies on (test/helpers/browser.ts) finds what it
 * must: a page with violations is reported, a clean page is not, and a check shares nothing with
 * the one before it on the browser's reused scratch page.
 */
let browser: Browser
let page: Page

const BROKEN =
  '<!doctype html><html lang="en"><head><title>Broken</title></head><body><main><h1>Broken</h1>' +
  '<form><input name="email"><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="></form></main></body></html>'
const CLEAN =
  '<!doctype html><html lang="en"><head><title>Clean</title></head><body><main><h1>Clean</h1>' +
  '<form><label for="email">Email</label><input id="email" name="email"></form></main></body></html>'

beforeAll(async () => {
  browser = await launchBrowser()
  page = await (await browser.newContext({ javaScriptEnabled: false })).newPage()
})
afterAll(async () => {
  await browser?.close()
})

it('reports an unlabelled field and an image without alternative text, and passes a clean page', async () => {
  await page.setContent(BROKEN)
  const violations = await axeViolations(page)
  expect(violations.some((v) => v.startsWith('label:'))).toBe(true)
  expect(violations.some((v) => v.startsWith('image-alt:'))).toBe(true)
  await page.setContent(CLEAN)
  expect(await axeViolations(page)).toEqual([])
  await page.setContent(BROKEN)
  expect(await axeViolations(page)).toEqual(violations)
})

it('answers checks made at the same time each for its own page', async () => {
  const clean = await (await browser.newContext({ javaScriptEnabled: false })).newPage()
  await clean.setContent(CLEAN)
  await page.setContent(BROKEN)
  const [broken, fine] = await Promise.all([axeViolations(page), axeViolations(clean)])
  expect(broken.length).toBeGreaterThan(0)
  expect(fine).toEqual([])
})
