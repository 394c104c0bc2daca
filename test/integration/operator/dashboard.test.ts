import { afterAll, beforeAll, expect, it } from 'vitest'
import { ACTIVITY_CACHE_MS } from '../../../src/operator/index.js'
import type { TestContext } from '../../helpers/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { createApplicationViaConsole, textById } from '../../helpers/console.js'
import { type TestClient, createClient, exchange, loggedInUser, obtainCode } from '../oauth/helpers.js'

/*
 * /admin's dashboard (docs/operating/admin.md "The dashboard") on either engine: events made through
 * the real pages and endpoints at known moments of the test's clock, and the counts the page
 * shows as text, per hour of the last 24 and per day of the last 7 (UTC).
 */

let t: TestContext
let client: TestClient
const OPERATOR = 'operator@example.com'
const PASSWORD = 'correct horse battery'
// A Wednesday, half past noon: the last 24 hours are 10 Mar 13:00 to 11 Mar 13:00, the last 7 days 5 to 11 Mar.
const NOW = new Date('2026-03-11T12:30:00Z')

let operator: BrowserSession
beforeAll(async () => {
  t = await buildTestApp({ LOGIN_RATE_LIMIT: '10000' })
  client = await createClient(t.db)
  // Eight days before the first test's now, outside both of its periods: the operator signs up and logs in.
  t.clock.set(new Date('2026-03-03T12:30:00Z'))
  operator = await loggedInUser(t.app, OPERATOR)
  await t.db.updateTable('users').set({ is_operator: true }).where('email', '=', OPERATOR).execute()
})
afterAll(() => t?.close())

async function tokenFor(s: BrowserSession): Promise<string> {
  const res = await exchange(t.app, client, { code: await obtainCode(s, client) })
  expect(res.statusCode, res.body).toBe(200)
  return res.json<{ access_token: string }>().access_token
}

function revoke(token: string) {
  return t.app.inject({
    method: 'POST',
    url: '/oauth/revoke',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ token, client_id: client.clientId, client_secret: client.clientSecret }).toString(),
  })
}

async function failLogIn(email: string): Promise<void> {
  const s = new BrowserSession(t.app)
  await s.get('/login')
  const res = await s.post('/login', { email, password: 'not the password' })
  expect(res.statusCode).toBe(401)
}

/** Each row of the period's table, its total last: its first cell, then the counts as the page writes them. */
function tableOf(html: string, id: string): Map<string, string[]> {
  const table = new RegExp(`<table id="${id}-table">([\\s\\S]*?)</table>`).exec(html)?.[1]
  if (!table) throw new Error(`no table #${id}-table`)
  const rows = new Map<string, string[]>()
  for (const row of table.matchAll(/<tr><th scope="row">([^<]+)<\/th>((?:<td>[^<]*<\/td>)+)<\/tr>/g)) {
    rows.set(
      row[1]!,
      [...row[2]!.matchAll(/<td>([^<]*)<\/td>/g)].map((m) => m[1]!),
    )
  }
  return rows
}

const KEYS = ['signIns', 'failedLogIns', 'tokensIssued', 'tokensRevoked', 'newApplications']
const totals = (html: string, period: string) => KEYS.map((k) => textById(html, `${period}-${k}-total`))

it('counts sign-ins, failed log-ins, tokens issued and revoked and new applications per hour and per day', async () => {
  // Eight days ago, outside both periods: a sign-in (beforeAll), an application, a token.
  t.clock.set(new Date('2026-03-03T12:31:00Z'))
  await createApplicationViaConsole(operator)
  const oldToken = await tokenFor(operator)

  // Sunday 8 March, 09:15: a sign-in, two failed log-ins, an application, a token.
  t.clock.set(new Date('2026-03-08T09:15:00Z'))
  const developer = await loggedInUser(t.app)
  await failLogIn(developer.email)
  await failLogIn('nobody@example.com')
  await createApplicationViaConsole(developer)
  const sundayToken = await tokenFor(developer)

  // Today 10:05: a sign-in, a failed log-in, a token; both earlier tokens revoked.
  t.clock.set(new Date('2026-03-11T10:05:00Z'))
  const other = await loggedInUser(t.app)
  await failLogIn(other.email)
  await tokenFor(other)
  for (const token of [oldToken, sundayToken]) expect((await revoke(token)).statusCode).toBe(200)

  // Now: the operator logs in again and opens /admin.
  t.clock.set(NOW)
  const s = new BrowserSession(t.app)
  await s.logIn(OPERATOR, PASSWORD)
  const page = await s.get('/admin')
  expect(page.statusCode).toBe(200)

  expect(totals(page.body, 'last-24-hours')).toEqual(['2', '1', '1', '2', '0'])
  expect(totals(page.body, 'last-7-days')).toEqual(['3', '3', '2', '2', '1'])
  const hours = tableOf(page.body, 'last-24-hours')
  expect(hours.size).toBe(25)
  expect(hours.get('Total')).toEqual(['2', '1', '1', '2', '0'])
  expect([...hours.keys()].slice(0, 2)).toEqual(['Wed 11 Mar, 12:00–13:00', 'Wed 11 Mar, 11:00–12:00'])
  expect([...hours.keys()].at(-2)).toBe('Tue 10 Mar, 13:00–14:00')
  expect(hours.get('Wed 11 Mar, 12:00–13:00')).toEqual(['1', '0', '0', '0', '0'])
  expect(hours.get('Wed 11 Mar, 10:00–11:00')).toEqual(['1', '1', '1', '2', '0'])
  const days = tableOf(page.body, 'last-7-days')
  expect([...days.keys()]).toEqual(['Wed 11 Mar', 'Tue 10 Mar', 'Mon 9 Mar', 'Sun 8 Mar', 'Sat 7 Mar', 'Fri 6 Mar', 'Thu 5 Mar', 'Total'])
  expect(days.get('Sun 8 Mar')).toEqual(['1', '2', '1', '0', '1'])
  expect(days.get('Wed 11 Mar')).toEqual(['2', '1', '1', '2', '0'])
  expect(days.get('Mon 9 Mar')).toEqual(['0', '0', '0', '0', '0'])
  // Each chart is an image named and described in words, its total beside it.
  expect(page.body).toContain(
    '<desc id="chart-last-7-days-failedLogIns-desc">Failed log-ins: 3 in all; the most in one day, 2, Sun 8 Mar.</desc>',
  )
  expect(page.body).toContain('<desc id="chart-last-24-hours-newApplications-desc">New applications: none.</desc>')
  expect(page.body).toContain('Counted Wed 11 Mar 12:30 UTC')
  // The operator's other pages are still a link away.
  for (const href of ['/admin/users', '/admin/applications', '/admin/audit']) expect(page.body).toContain(`<a href="${href}">`)

  // Counts are kept a minute by the process: a failed log-in now shows once the minute is over.
  await failLogIn(OPERATOR)
  t.clock.advance(ACTIVITY_CACHE_MS - 1000)
  expect(totals((await s.get('/admin')).body, 'last-24-hours')[1]).toBe('1')
  t.clock.advance(1000)
  const later = await s.get('/admin')
  expect(totals(later.body, 'last-24-hours')[1]).toBe('2')
  expect(later.body).toContain('Counted Wed 11 Mar 12:31 UTC')
})

it('counts a moment at the start of a period in it, and a millisecond earlier out of it', async () => {
  // Another week, far from the first test's: Wednesday 17 June, 12:30.
  const at = (iso: string) => t.clock.set(new Date(iso))
  for (const moment of ['2026-06-10T23:59:59.999Z', '2026-06-11T00:00:00.000Z', '2026-06-16T12:59:59.999Z', '2026-06-16T13:00:00.000Z']) {
    at(moment)
    await failLogIn('nobody@example.com')
  }
  at('2026-06-17T12:30:00Z')
  const s = new BrowserSession(t.app)
  await s.logIn(OPERATOR, PASSWORD)
  const page = (await s.get('/admin')).body
  expect(totals(page, 'last-24-hours')).toEqual(['1', '1', '0', '0', '0'])
  expect(totals(page, 'last-7-days')).toEqual(['1', '3', '0', '0', '0'])
  expect(tableOf(page, 'last-24-hours').get('Tue 16 Jun, 13:00–14:00')).toEqual(['0', '1', '0', '0', '0'])
  expect(tableOf(page, 'last-7-days').get('Thu 11 Jun')).toEqual(['0', '1', '0', '0', '0'])
  expect(tableOf(page, 'last-7-days').get('Tue 16 Jun')).toEqual(['0', '2', '0', '0', '0'])
})

it('reads the counts once for page loads at the same moment, and not again within the minute', async () => {
  t.clock.set(new Date('2026-06-17T13:30:00Z'))
  const s = new BrowserSession(t.app)
  await s.logIn(OPERATOR, PASSWORD)
  let reads = 0
  t.queries.afterQuery = async (rows) => {
    if (rows.some((row) => 'hours_ago' in row)) reads++
  }
  try {
    const pages = await Promise.all([s.get('/admin'), s.get('/admin'), s.get('/admin')])
    for (const page of pages) expect(totals(page.body, 'last-7-days')[1]).toBe('3')
    expect(reads).toBe(1)
    t.clock.advance(ACTIVITY_CACHE_MS - 1)
    await s.get('/admin')
    expect(reads).toBe(1)
    t.clock.advance(1)
    await s.get('/admin')
    expect(reads).toBe(2)
  } finally {
    t.queries.afterQuery = undefined
  }
})

it('shows nobody but an operator the dashboard: the same 404 as for no page', async () => {
  t.clock.set(NOW)
  const stranger = await loggedInUser(t.app)
  for (const s of [stranger, new BrowserSession(t.app)]) {
    const res = await s.get('/admin')
    expect(res.statusCode).toBe(404)
    expect(res.body).not.toContain('bar-chart')
  }
})
