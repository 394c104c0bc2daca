import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashPassword } from '../../../src/lib/passwords.js'
import { buildTestApp, type TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'

/*
 * Log-in throttling (OWASP device cookies) and the sign-up limit, docs/operating/limits.md.
 * Time moves only by the injected clock; counters that would take long to fill are set directly.
 */

const PASSWORD = 'correct horse battery'
const FIFTEEN_MINUTES = 15 * 60_000
const DEVICE = 'gatehouse_device'

let t: TestContext
let passwordHash: string
beforeAll(async () => {
  t = await buildTestApp({ SIGNUP_LIMIT: '10' })
  passwordHash = await hashPassword(PASSWORD)
})
afterAll(async () => {
  await t.close()
})

/** Users who can log in with PASSWORD, inserted directly (one argon2 hash for all). */
async function createUsers(emails: string[]): Promise<void> {
  await t.db
    .insertInto('users')
    .values(emails.map((email) => ({ email, password_hash: passwordHash, created_at: t.clock() })))
    .execute()
}

/** Logs in afresh: a browser already logged in is first logged out (it keeps its device cookie). */
async function attemptLogIn(s: BrowserSession, email: string, password: string) {
  s.cookies.delete('gatehouse_session')
  await s.get('/login')
  return s.post('/login', { email, password })
}

async function counter(key: string): Promise<number | undefined> {
  return (await t.db.selectFrom('rate_limits').select('count').where('key', '=', key).executeTakeFirst())?.count
}

it('lets 50 different users log in from one address within a minute', async () => {
  const emails = Array.from({ length: 50 }, (_, i) => `colleague${i}@example.com`)
  await createUsers(emails)
  const statuses: number[] = []
  for (const email of emails) {
    statuses.push((await attemptLogIn(new BrowserSession(t.app, '192.0.2.50'), email, PASSWORD)).statusCode)
    t.clock.advance(1000)
  }
  expect(statuses.filter((s) => s !== 303)).toEqual([])
  // Successes count against nothing.
  expect(await counter('login:addr:192.0.2.50')).toBe(0)
})

describe('per (account, address)', () => {
  it('answers the 11th failure for one account from one address with 429 and Retry-After, until the window passes', async () => {
    await createUsers(['target@example.com'])
    const s = new BrowserSession(t.app, '192.0.2.11')
    for (let i = 0; i < 10; i++) expect((await attemptLogIn(s, 'target@example.com', `guess number ${i}`)).statusCode).toBe(401)
    const limited = await attemptLogIn(s, 'target@example.com', PASSWORD)
    expect(limited.statusCode).toBe(429)
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0)
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(15 * 60)
    expect(limited.body).toContain('Too many attempts')

    // Another address is not refused: the owner is not locked out by the first one.
    expect((await attemptLogIn(new BrowserSession(t.app, '192.0.2.12'), 'target@example.com', PASSWORD)).statusCode).toBe(303)

    t.clock.advance(FIFTEEN_MINUTES + 1000)
    expect((await attemptLogIn(s, 'target@example.com', PASSWORD)).statusCode).toBe(303)
  })

  it('gives an unknown email the same 429 as a registered one', async () => {
    const answers: Array<{ status: number; retry: unknown; body: string }> = []
    for (const [email, address] of [
      ['target@example.com', '192.0.2.13'],
      ['ghost@example.com', '192.0.2.14'],
    ] as const) {
      const s = new BrowserSession(t.app, address)
      for (let i = 0; i < 10; i++) expect((await attemptLogIn(s, email, 'wrong password')).statusCode).toBe(401)
      const res = await attemptLogIn(s, email, 'wrong password')
      const formError = /<[^>]*role="alert"[^>]*>([\s\S]*?)</.exec(res.body)?.[1] ?? res.body.match(/Too many[^<]*/)?.[0] ?? ''
      answers.push({ status: res.statusCode, retry: res.headers['retry-after'], body: formError })
    }
    expect(answers[0]).toEqual(answers[1])
    expect(answers[0]?.status).toBe(429)
    t.clock.advance(FIFTEEN_MINUTES + 1000)
  })

  it('does not count a refused attempt against the account', async () => {
    const before = await counter('login:acct:target@example.com')
    const s = new BrowserSession(t.app, '192.0.2.15')
    for (let i = 0; i < 10; i++) await attemptLogIn(s, 'target@example.com', 'wrong password')
    for (let i = 0; i < 5; i++) expect((await attemptLogIn(s, 'target@example.com', 'wrong password')).statusCode).toBe(429)
    expect(await counter('login:acct:target@example.com')).toBe((before ?? 0) + 10)
    t.clock.advance(60 * 60_000 + 1000)
  })
})

describe('device cookies', () => {
  let owner: BrowserSession
  beforeAll(async () => {
    await createUsers(['owner@example.com', 'other@example.com'])
    owner = new BrowserSession(t.app, '192.0.2.100')
    await owner.logIn('owner@example.com', PASSWORD)
  })

  it('are issued at log-in: HttpOnly, SameSite=Lax, long-lived, bound to the account', async () => {
    const res = await attemptLogIn(new BrowserSession(t.app, '192.0.2.101'), 'owner@example.com', PASSWORD)
    const cookie = (
      res.cookies as Array<{ name: string; value: string; httpOnly?: boolean; sameSite?: string; maxAge?: number; path?: string }>
    ).find((c) => c.name === DEVICE)
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' })
    expect(cookie?.maxAge).toBeGreaterThan(365 * 24 * 3600)
    const user = await t.db.selectFrom('users').select('id').where('email', '=', 'owner@example.com').executeTakeFirstOrThrow()
    expect(cookie?.value.split('.')[1]).toBe(user.id)
    // The signing key is generated once, in the database, for every process.
    expect(await t.db.selectFrom('server_secrets').select('name').execute()).toEqual([{ name: 'device-cookie' }])
  })

  it("let the owner's browser log in after 1,000 failures from rotating addresses, while others are refused", async () => {
    // A few real failures from rotating addresses, then the rest of the 1,000 set directly.
    for (let i = 0; i < 5; i++) {
      expect((await attemptLogIn(new BrowserSession(t.app, `198.51.100.${i}`), 'owner@example.com', `guess ${i}`)).statusCode).toBe(401)
    }
    expect(await counter('login:acct:owner@example.com')).toBe(5)
    await t.db.updateTable('rate_limits').set({ count: 1000 }).where('key', '=', 'login:acct:owner@example.com').execute()

    const stranger = await attemptLogIn(new BrowserSession(t.app, '198.51.100.200'), 'owner@example.com', PASSWORD)
    expect(stranger.statusCode).toBe(429)
    expect(stranger.headers['retry-after']).toBeDefined()
    expect(stranger.body).toContain('Log in from a browser you have logged in with before')

    expect((await attemptLogIn(owner, 'owner@example.com', PASSWORD)).statusCode).toBe(303)
  })

  it("count the device's failures per device, not against the account", async () => {
    expect((await attemptLogIn(owner, 'owner@example.com', 'typo')).statusCode).toBe(401)
    expect(await counter('login:acct:owner@example.com')).toBe(1000)
    for (let i = 0; i < 9; i++) expect((await attemptLogIn(owner, 'owner@example.com', 'typo')).statusCode).toBe(401)
    expect((await attemptLogIn(owner, 'owner@example.com', PASSWORD)).statusCode).toBe(429)
  })

  it('ignore a device cookie for another account or with a bad signature', async () => {
    const other = new BrowserSession(t.app, '198.51.100.201')
    await other.logIn('other@example.com', PASSWORD)
    expect(other.cookies.get(DEVICE)).toBeDefined()
    expect((await attemptLogIn(other, 'owner@example.com', PASSWORD)).statusCode).toBe(429)

    const forged = new BrowserSession(t.app, '198.51.100.202')
    const [format, userId, nonce, signature] = (owner.cookies.get(DEVICE) ?? '').split('.')
    forged.cookies.set(DEVICE, `${format}.${userId}.${nonce}x.${signature}`)
    expect((await attemptLogIn(forged, 'owner@example.com', PASSWORD)).statusCode).toBe(429)
    forged.cookies.set(DEVICE, `${format}.${userId}.${nonce}.${(signature ?? '').slice(1)}A`)
    expect((await attemptLogIn(forged, 'owner@example.com', PASSWORD)).statusCode).toBe(429)
    t.clock.advance(60 * 60_000 + 1000)
  })
})

describe('per address, and sign-up', () => {
  let spray: TestContext
  beforeAll(async () => {
    spray = await buildTestApp({ LOGIN_ADDRESS_FAILURE_LIMIT: '5', SIGNUP_LIMIT: '10' }, t.testDb)
  })
  afterAll(async () => {
    await spray.close()
  })

  it('refuses password spraying from one address after the limit, whatever the accounts', async () => {
    const s = new BrowserSession(spray.app, '203.0.113.5')
    for (let i = 0; i < 5; i++) expect((await attemptLogIn(s, `victim${i}@example.com`, PASSWORD)).statusCode).toBe(401)
    const limited = await attemptLogIn(s, 'colleague0@example.com', PASSWORD)
    expect(limited.statusCode).toBe(429)
    expect(limited.headers['retry-after']).toBeDefined()
    // Refused by the address limit: counted against neither the account nor the pair.
    expect((await counter('login:acct:colleague0@example.com')) ?? 0).toBe(0)
    expect((await attemptLogIn(new BrowserSession(spray.app, '203.0.113.6'), 'colleague0@example.com', PASSWORD)).statusCode).toBe(303)
  })

  it('bounds every log-in attempt per address, successful ones too, and not another address', async () => {
    const bounded = await buildTestApp({ LOGIN_ADDRESS_ATTEMPT_LIMIT: '3' }, t.testDb)
    try {
      const s = new BrowserSession(bounded.app, '203.0.113.7')
      for (let i = 0; i < 3; i++) expect((await attemptLogIn(s, 'colleague1@example.com', PASSWORD)).statusCode).toBe(303)
      const limited = await attemptLogIn(s, 'colleague1@example.com', PASSWORD)
      expect(limited.statusCode).toBe(429)
      expect(limited.headers['retry-after']).toBeDefined()
      expect((await attemptLogIn(new BrowserSession(bounded.app, '203.0.113.8'), 'colleague1@example.com', PASSWORD)).statusCode).toBe(303)
      // The window ends.
      bounded.clock.advance(60 * 60_000)
      expect((await attemptLogIn(s, 'colleague1@example.com', PASSWORD)).statusCode).toBe(303)
    } finally {
      await bounded.close()
    }
  })

  it('allows SIGNUP_LIMIT sign-ups per address an hour', async () => {
    const s = new BrowserSession(spray.app, '203.0.113.7')
    for (let i = 0; i < 10; i++) {
      await s.get('/signup')
      expect((await s.post('/signup', { email: `new${i}@example.com`, password: PASSWORD })).statusCode).toBe(303)
    }
    await s.get('/signup')
    const limited = await s.post('/signup', { email: 'new10@example.com', password: PASSWORD })
    expect(limited.statusCode).toBe(429)
    expect(limited.headers['retry-after']).toBeDefined()
    expect(await t.db.selectFrom('users').select('id').where('email', '=', 'new10@example.com').executeTakeFirst()).toBeUndefined()
    // Another address is not affected.
    const elsewhere = new BrowserSession(spray.app, '203.0.113.8')
    await elsewhere.get('/signup')
    expect((await elsewhere.post('/signup', { email: 'new10@example.com', password: PASSWORD })).statusCode).toBe(303)
  })
})

describe('client addresses', () => {
  async function addressKeys(ctx: TestContext): Promise<string[]> {
    const rows = await ctx.db.selectFrom('rate_limits').select('key').where('key', 'like', 'login:addr:%').execute()
    return rows.map((r) => r.key)
  }

  it('ignores X-Forwarded-For without TRUST_PROXY', async () => {
    const s = new BrowserSession(t.app, '192.0.2.77')
    await s.get('/login')
    await s.post('/login', { email: 'xff@example.com', password: 'wrong password' }, { 'x-forwarded-for': '203.0.113.99' })
    const keys = await addressKeys(t)
    expect(keys).toContain('login:addr:192.0.2.77')
    expect(keys).not.toContain('login:addr:203.0.113.99')
  })

  it('honours X-Forwarded-For only from a listed proxy', async () => {
    const proxied = await buildTestApp({ TRUST_PROXY: '192.0.2.250, 2001:db8:ff::/48' }, t.testDb)
    try {
      const viaProxy = new BrowserSession(proxied.app, '192.0.2.250')
      await viaProxy.get('/login')
      await viaProxy.post('/login', { email: 'xff@example.com', password: 'wrong password' }, { 'x-forwarded-for': '203.0.113.101' })
      const viaV6Proxy = new BrowserSession(proxied.app, '2001:db8:ff::1')
      await viaV6Proxy.get('/login')
      await viaV6Proxy.post('/login', { email: 'xff@example.com', password: 'wrong password' }, { 'x-forwarded-for': '203.0.113.102' })
      const direct = new BrowserSession(proxied.app, '192.0.2.251')
      await direct.get('/login')
      await direct.post('/login', { email: 'xff@example.com', password: 'wrong password' }, { 'x-forwarded-for': '203.0.113.103' })
      const keys = await addressKeys(proxied)
      expect(keys).toEqual(expect.arrayContaining(['login:addr:203.0.113.101', 'login:addr:203.0.113.102', 'login:addr:192.0.2.251']))
      expect(keys).not.toContain('login:addr:203.0.113.103')
      expect(keys).not.toContain('login:addr:192.0.2.250')
    } finally {
      await proxied.close()
    }
  })

  it('keys IPv6 clients by their /64', async () => {
    for (let i = 1; i <= 10; i++) {
      const s = new BrowserSession(t.app, `2001:db8:6:4::${i.toString(16)}`)
      expect((await attemptLogIn(s, 'target@example.com', 'wrong password')).statusCode).toBe(401)
    }
    expect((await attemptLogIn(new BrowserSession(t.app, '2001:db8:6:4:ffff::1'), 'target@example.com', PASSWORD)).statusCode).toBe(429)
    expect((await attemptLogIn(new BrowserSession(t.app, '2001:db8:6:5::1'), 'target@example.com', PASSWORD)).statusCode).toBe(303)
    expect(await counter('login:acct-addr:2001:db8:6:4::/64:target@example.com')).toBe(10)
  })
})
