import { afterAll, beforeAll, expect, it } from 'vitest'
import { buildTestApp, type TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'

/* Log-in and sign-up allow LOGIN_RATE_LIMIT attempts per account and per IP in 15 minutes. */

let t: TestContext
beforeAll(async () => {
  t = await buildTestApp({ LOGIN_RATE_LIMIT: '3' })
})
afterAll(async () => {
  await t.close()
})

const PASSWORD = 'correct horse battery'
const FIFTEEN_MINUTES = 15 * 60_000

async function attemptLogIn(s: BrowserSession, email: string, password: string) {
  await s.get('/login')
  return s.post('/login', { email, password })
}

it('answers 429 with Retry-After once an account has used its attempts, until the window passes', async () => {
  const owner = new BrowserSession(t.app, '10.0.0.1')
  await owner.get('/signup')
  await owner.post('/signup', { email: 'target@example.com', password: PASSWORD })

  // Attempts from different addresses, so only the per-account limit is in play.
  for (let i = 0; i < 3; i++) {
    expect((await attemptLogIn(new BrowserSession(t.app, `10.0.1.${i}`), 'target@example.com', 'guess number ' + i)).statusCode).toBe(401)
  }
  const limited = await attemptLogIn(new BrowserSession(t.app, '10.0.1.9'), 'target@example.com', PASSWORD)
  expect(limited.statusCode).toBe(429)
  expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0)
  expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(15 * 60)
  expect(limited.body).toContain('Too many attempts')

  t.clock.advance(FIFTEEN_MINUTES + 1000)
  const after = await attemptLogIn(new BrowserSession(t.app, '10.0.1.10'), 'target@example.com', PASSWORD)
  expect(after.statusCode).toBe(303)
})

it('limits one address trying many accounts', async () => {
  const s = new BrowserSession(t.app, '10.0.2.1')
  for (let i = 0; i < 3; i++) expect((await attemptLogIn(s, `someone${i}@example.com`, PASSWORD)).statusCode).toBe(401)
  const limited = await attemptLogIn(s, 'someone-else@example.com', PASSWORD)
  expect(limited.statusCode).toBe(429)
  expect(limited.headers['retry-after']).toBeDefined()
  t.clock.advance(FIFTEEN_MINUTES + 1000)
  expect((await attemptLogIn(s, 'someone-else@example.com', PASSWORD)).statusCode).toBe(401)
})

it('gives a limited unknown email the same 429 as a limited registered one', async () => {
  const bodies: Array<{ status: number; retry: unknown }> = []
  for (const email of ['target@example.com', 'ghost@example.com']) {
    for (let i = 0; i < 3; i++) await attemptLogIn(new BrowserSession(t.app, `10.0.3.${i}`), email, 'wrong password')
    const res = await attemptLogIn(new BrowserSession(t.app, '10.0.3.9'), email, 'wrong password')
    bodies.push({ status: res.statusCode, retry: res.headers['retry-after'] })
  }
  expect(bodies[0]).toEqual(bodies[1])
  expect(bodies[0]?.status).toBe(429)
  t.clock.advance(FIFTEEN_MINUTES + 1000)
})

it('limits sign-up per address as well', async () => {
  const s = new BrowserSession(t.app, '10.0.4.1')
  for (let i = 0; i < 3; i++) {
    await s.get('/signup')
    expect((await s.post('/signup', { email: `new${i}@example.com`, password: PASSWORD })).statusCode).toBe(303)
  }
  await s.get('/signup')
  const limited = await s.post('/signup', { email: 'new9@example.com', password: PASSWORD })
  expect(limited.statusCode).toBe(429)
  expect(limited.headers['retry-after']).toBeDefined()
  expect(await t.db.selectFrom('users').select('id').where('email', '=', 'new9@example.com').executeTakeFirst()).toBeUndefined()
})
