import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { refreshSecondFactor } from '../../../src/repositories/second-factor.js'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { expectAccessiblePage } from '../../helpers/console.js'
import { createUser } from '../../helpers/factories.js'
import type { TestDatabase } from '../../helpers/db.js'
import { createClient, loggedInUser } from '../oauth/helpers.js'
import { STEP_MS, enrolTotp, totpCode } from '../../helpers/totp.js'

/*
 * REQUIRE_TWO_FACTOR (docs/accounts.md "Who must enrol"): each value on one app over one shared
 * database. An account gets its second factor as the TOTP and passkey pages give it: a row of
 * totp_secrets or passkeys, users.second_factor refreshed from them, and the enrolling session's
 * amr marked with the factor (src/accounts/sessions/sessions.ts markSecondFactorUsed). The last describe
 * enrols through the real pages.
 */

const ENROL_FIRST = 'Set up a second factor first'
let shared: TestContext
const apps = new Map<string, TestContext>()

beforeAll(async () => {
  shared = await buildTestApp()
  for (const policy of ['none', 'operators', 'developers', 'all']) {
    apps.set(policy, await buildTestApp({ REQUIRE_TWO_FACTOR: policy }, shared.testDb as TestDatabase))
  }
})
afterAll(async () => {
  for (const t of apps.values()) await t.close()
  await shared.close()
})

const appOf = (policy: string) => apps.get(policy)!

async function userIdOf(email: string): Promise<string> {
  return (await shared.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()).id
}

async function withTotp(email: string): Promise<void> {
  const userId = await userIdOf(email)
  await shared.db
    .insertInto('totp_secrets')
    .values({ user_id: userId, secret_sealed: 'sealed', last_step: 0, created_at: new Date() })
    .execute()
  await refreshSecondFactor(shared.db, userId)
  await shared.db
    .updateTable('sessions')
    .set({ amr: ['pwd', 'otp', 'mfa'] })
    .where('user_id', '=', userId)
    .execute()
}

async function withPasskey(email: string): Promise<void> {
  const userId = await userIdOf(email)
  await shared.db
    .insertInto('passkeys')
    .values({
      id: `cred-${userId}`,
      user_id: userId,
      public_key: Buffer.from('key'),
      counter: 0,
      name: 'Laptop',
      backed_up: false,
      created_at: new Date(),
    })
    .execute()
  await refreshSecondFactor(shared.db, userId)
  await shared.db
    .updateTable('sessions')
    .set({ amr: ['pwd', 'hwk', 'mfa'] })
    .where('user_id', '=', userId)
    .execute()
}

async function operatorOn(policy: string, factor: 'none' | 'totp' | 'passkey') {
  const s = await loggedInUser(appOf(policy).app)
  await shared.db.updateTable('users').set({ is_operator: true }).where('email', '=', s.email).execute()
  if (factor === 'totp') await withTotp(s.email)
  if (factor === 'passkey') await withPasskey(s.email)
  return s
}

async function userOn(policy: string, factor: 'none' | 'totp') {
  const s = await loggedInUser(appOf(policy).app)
  if (factor === 'totp') await withTotp(s.email)
  return s
}

function expectEnrolFirst(res: { statusCode: number; body: string }, path: string) {
  expect(res.statusCode, path).toBe(403)
  expect(res.body, path).toContain(ENROL_FIRST)
  expect(res.body).toContain('href="/account/two-factor"')
  expect(res.body).toContain('href="/account/passkeys"')
}

describe('none', () => {
  it('lets an operator without a second factor use /admin', async () => {
    const op = await operatorOn('none', 'none')
    expect((await op.get('/admin')).statusCode).toBe(200)
    expect((await op.get('/admin/users')).statusCode).toBe(200)
  })
})

describe('operators (the default)', () => {
  it('is the default', async () => {
    expect(shared.config.requireSecondFactor).toBe('none') // buildTestApp's own default, for the other tests
    const { loadConfig } = await import('../../../src/config.js')
    expect(loadConfig({}).requireSecondFactor).toBe('operators')
  })

  it('refuses /admin to an operator without a second factor, pages and actions alike, saying why', async () => {
    const op = await operatorOn('operators', 'none')
    const target = await createUser(shared.db)
    for (const path of ['/admin', '/admin/users', `/admin/users/${target.id}`, `/admin/users/${target.id}/suspend`]) {
      expectEnrolFirst(await op.get(path), path)
    }
    const page = await op.get('/admin')
    expect(page.body).toContain('every operator')
    expectAccessiblePage(page.body)
    await op.get('/applications')
    const post = await op.post(`/admin/users/${target.id}/suspend`, {})
    expectEnrolFirst(post, 'POST suspend')
    const row = await shared.db.selectFrom('users').select('suspended_at').where('id', '=', target.id).executeTakeFirstOrThrow()
    expect(row.suspended_at).toBeNull()
    // The rest of the console is open to them.
    expect((await op.get('/applications')).statusCode).toBe(200)
    expect((await op.get('/applications/new')).statusCode).toBe(200)
    expect((await op.get('/account')).statusCode).toBe(200)
  })

  it('opens /admin once the operator has a TOTP secret or a passkey', async () => {
    for (const factor of ['totp', 'passkey'] as const) {
      const op = await operatorOn('operators', factor)
      expect((await op.get('/admin')).statusCode, factor).toBe(200)
      expect((await op.get('/admin/users')).statusCode, factor).toBe(200)
    }
  })

  it('still answers 404 to a user who is not an operator: the pages are not advertised', async () => {
    const user = await userOn('operators', 'none')
    const res = await user.get('/admin')
    expect(res.statusCode).toBe(404)
    expect(res.body).not.toContain(ENROL_FIRST)
  })
})

describe('developers', () => {
  it('refuses registering and managing applications without a second factor; nothing is registered', async () => {
    const dev = await userOn('developers', 'none')
    for (const path of ['/applications', '/applications/new']) expectEnrolFirst(await dev.get(path), path)
    expect((await dev.get('/applications')).body).toContain('every developer')
    await dev.get('/account')
    const post = await dev.post('/applications', { name: 'Nope', redirect_uris: 'https://x.example/cb', scopes: 'read' })
    expectEnrolFirst(post, 'POST /applications')
    const ownerId = await userIdOf(dev.email)
    expect(await shared.db.selectFrom('applications').select('id').where('owner_id', '=', ownerId).execute()).toEqual([])
    // Their account and the applications they use stay open.
    for (const path of ['/account', '/authorized-applications', '/account/security-log']) {
      expect((await dev.get(path)).statusCode, path).toBe(200)
    }
  })

  it('opens them with a second factor, and keeps /admin for enrolled operators only', async () => {
    const dev = await userOn('developers', 'totp')
    expect((await dev.get('/applications')).statusCode).toBe(200)
    const op = await operatorOn('developers', 'none')
    expectEnrolFirst(await op.get('/admin'), '/admin')
  })
})

describe('all', () => {
  it('sends every logged-in user without a second factor to enrol, on every console page and the consent flow', async () => {
    const user = await userOn('all', 'none')
    const client = await createClient(shared.db)
    const authorize = `/oauth/authorize?response_type=code&client_id=${client.clientId}&redirect_uri=${encodeURIComponent(client.redirectUri)}&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`
    for (const path of ['/', '/applications', '/account', '/authorized-applications', '/account/security-log', authorize]) {
      expectEnrolFirst(await user.get(path), path)
    }
    expect((await user.get('/account')).body).toContain('every account')
  })

  it('leaves open log-out, deleting the account, the mailed links, /reauth and the pages where a second factor is set up', async () => {
    const user = await userOn('all', 'none')
    for (const path of ['/reauth', '/verify-email?token=x', '/account/two-factor', '/account/passkeys', '/account/delete']) {
      const res = await user.get(path)
      expect(res.statusCode, path).not.toBe(403)
      expect(res.body, path).not.toContain(ENROL_FIRST)
    }
    await user.get('/reauth')
    const out = await user.post('/logout', {})
    expect(out.statusCode).toBe(303)
    expect(out.headers.location).toBe('/login')
  })

  it('asks nothing of a visitor without a session, nor of an account with a second factor', async () => {
    const visitor = new BrowserSession(appOf('all').app)
    expect((await visitor.get('/login')).statusCode).toBe(200)
    expect((await visitor.get('/applications')).headers.location).toBe('/login?next=%2Fapplications')
    const user = await userOn('all', 'totp')
    expect((await user.get('/applications')).statusCode).toBe(200)
    expect((await user.get('/account')).statusCode).toBe(200)
  })
})

describe('percent-encoded paths', () => {
  // The router matches the decoded path (RFC 3986 2.3: %61 is "a"), so the policy must too: it
  // reads the area of the route that answers, never the URL.
  it('refuses /admin spelled with encoded letters to an operator without a second factor', async () => {
    const op = await operatorOn('operators', 'none')
    const target = await createUser(shared.db)
    for (const path of ['/%61dmin', '/admin/%75sers', `/%61dmin/users/${target.id}`, `/admin/users/${target.id}/%73uspend`]) {
      expectEnrolFirst(await op.get(path), path)
    }
    await op.get('/applications')
    expectEnrolFirst(await op.post(`/admin/users/${target.id}/%73uspend`, {}), 'POST suspend')
    const row = await shared.db.selectFrom('users').select('suspended_at').where('id', '=', target.id).executeTakeFirstOrThrow()
    expect(row.suspended_at).toBeNull()
  })

  it('refuses the applications spelled with encoded letters to a developer without a second factor', async () => {
    const dev = await userOn('developers', 'none')
    for (const path of ['/%61pplications', '/%61pplications/new', '/applications/%6eew']) expectEnrolFirst(await dev.get(path), path)
    await dev.get('/account')
    const post = await dev.post('/%61pplications', { name: 'Nope', redirect_uris: 'https://x.example/cb', scopes: 'read' })
    expectEnrolFirst(post, 'POST /%61pplications')
    const ownerId = await userIdOf(dev.email)
    expect(await shared.db.selectFrom('applications').select('id').where('owner_id', '=', ownerId).execute()).toEqual([])
  })

  it('refuses the consent flow and the console spelled with encoded letters under all', async () => {
    const user = await userOn('all', 'none')
    const client = await createClient(shared.db)
    const query = `response_type=code&client_id=${client.clientId}&redirect_uri=${encodeURIComponent(client.redirectUri)}&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`
    for (const path of [`/oauth/%61uthorize?${query}`, `/%6fauth/authorize?${query}`, '/%61ccount', '/%61uthorized-applications']) {
      expectEnrolFirst(await user.get(path), path)
    }
  })
})

describe('the session, not only the account, must have used the second factor', () => {
  const USE_IT = 'Use your second factor first'
  const at = () => appOf('operators').clock()
  const browser = () => new BrowserSession(appOf('operators').app)

  /**
   * An operator logged in with the password alone in one browser (S1), who then enrols in another
   * (S2). Enrolling ends every other session (docs/decisions/011-second-factor.md "Adding a
   * factor"), so S1's row is put back afterwards: a password-only session that outlived the
   * account's first factor (one opened before enrolment ended other sessions), which the gate
   * must judge by its own methods, not the account's.
   */
  async function enrolledElsewhere() {
    const s1 = await operatorOn('operators', 'none')
    expectEnrolFirst(await s1.get('/admin'), 'S1 before enrolling')
    const userId = await userIdOf(s1.email)
    const s1Rows = await shared.db.selectFrom('sessions').selectAll().where('user_id', '=', userId).execute()
    const s2 = browser()
    await s2.logIn(s1.email)
    const { secret } = await enrolTotp(s2, at)
    appOf('operators').clock.advance(STEP_MS)
    const left = await shared.db.selectFrom('sessions').select('id_hash').where('user_id', '=', userId).execute()
    expect(left.map((row) => row.id_hash)).not.toContain(s1Rows[0]!.id_hash)
    await shared.db.insertInto('sessions').values(s1Rows).execute()
    return { s1, s2, secret }
  }

  it('a password-only session stays out of /admin once the account enrols; the enrolling session and a log-in with the factor get in', async () => {
    const { s1, s2, secret } = await enrolledElsewhere()
    for (const path of ['/admin', '/admin/users', '/%61dmin']) {
      const res = await s1.get(path)
      expect(res.statusCode, path).toBe(403)
      expect(res.body, path).toContain(USE_IT)
      expect(res.body, path).toContain('href="/reauth?next=')
    }
    expectAccessiblePage((await s1.get('/admin')).body)
    // The session that set the factor up proved it doing so.
    expect((await s2.get('/admin')).statusCode).toBe(200)
    // A new log-in with the password and the factor.
    const s3 = browser()
    expect((await s3.logIn(s1.email)).headers.location).toBe('/login/second-factor')
    await s3.get('/login/second-factor')
    expect((await s3.post('/login/second-factor', { code: totpCode(secret, at()) })).statusCode).toBe(303)
    expect((await s3.get('/admin')).statusCode).toBe(200)
    const amr = await shared.db
      .selectFrom('sessions')
      .select('amr')
      .where('user_id', '=', await userIdOf(s1.email))
      .execute()
    expect(amr.map((row) => row.amr).sort()).toEqual([['pwd'], ['pwd', 'otp', 'mfa'], ['pwd', 'otp', 'mfa']])
  })

  it('a password-only session that confirms with a code at /reauth has used the factor from then on; the password alone does not', async () => {
    const { s1, secret } = await enrolledElsewhere()
    await s1.get('/reauth?next=/admin')
    expect((await s1.post('/reauth', { password: 'correct horse battery', next: '/admin' })).headers.location).toBe('/admin')
    expect((await s1.get('/admin')).body).toContain(USE_IT)
    await s1.get('/reauth?next=/admin')
    expect((await s1.post('/reauth', { code: totpCode(secret, at()), next: '/admin' })).headers.location).toBe('/admin')
    expect((await s1.get('/admin')).statusCode).toBe(200)
  })
})
