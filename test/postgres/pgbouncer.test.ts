import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createDatabase } from '../../src/db/connect.js'
import { sha256Base64Url, sha256Hex } from '../../src/lib/crypto.js'
import { type TestDatabase, createTestDatabase } from '../helpers/db.js'
import { type AccessTokenFixture, type ApplicationFixture, type UserFixture, basicAuth, createAccessToken } from '../helpers/factories.js'
import { ensureBuilt } from '../helpers/build.js'
import { type GatehouseProcess, freePort, runBuiltCli, startGatehouses } from '../helpers/gatehouse-process.js'
import { type PgBouncer, startPgBouncer } from '../helpers/pgbouncer.js'
import { NOTICE_WAIT_MS, isActive, msUntil, revokeThrough, seed } from '../helpers/propagation.js'

/*
 * docs/operating/pgbouncer.md: three Gatehouse processes whose queries go through a PgBouncer in
 * transaction mode (DATABASE_URL, DATABASE_PREPARED_STATEMENTS=false) and whose LISTEN goes
 * straight to PostgreSQL (DATABASE_LISTEN_URL) keep the contract of one process: a revocation
 * through one is refused by the others once its notice arrives (the one-second target of
 * docs/decisions/003-revocation-propagation.md is what `npm run bench:propagation` measures),
 * a code is exchanged once (RFC 6749 4.1.2), and an outage answers 503, not 500.
 * Real time, as in the other multi-process tests: the processes cannot share an injected clock.
 */
describe('three Gatehouse processes behind PgBouncer in transaction mode (needs TEST_DATABASE_URL)', () => {
  let testDb: TestDatabase
  let bouncer: PgBouncer
  let processes: GatehouseProcess[]
  let user: UserFixture
  let app: ApplicationFixture
  let rs: ApplicationFixture

  beforeAll(async () => {
    testDb = await createTestDatabase()
    const dbname = new URL(testDb.url!).pathname.slice(1)
    bouncer = await startPgBouncer(testDb.url!, [
      { alias: 'gatehouse', dbname },
      // One server connection: every client shares it, transaction after transaction.
      { alias: 'gatehouse_one', dbname, poolSize: 1 },
    ])
    const env = {
      DATABASE_URL: bouncer.url('gatehouse'),
      DATABASE_LISTEN_URL: testDb.url!,
      DATABASE_PREPARED_STATEMENTS: 'false',
      DATABASE_POOL_MAX: '4',
      // What a process that does not come up was doing (src/service-lifecycle.ts startServing), for the failure message.
      LOG_LEVEL: 'info',
    }
    // The built server, as in production behind a load balancer, the three started side by side:
    // each migrates at start (the next test).
    await ensureBuilt()
    processes = await startGatehouses(3, env, { built: true, timeoutMs: 90_000 })
    ;({ user, application: app, resourceServer: rs } = await seed(testDb.handle.db))
  }, 180_000)
  afterAll(async () => {
    await Promise.all((processes ?? []).map((p) => p.stop()))
    await bouncer?.stop()
    await testDb?.destroy()
  })

  /*
   * Kysely's migrator holds a session-level advisory lock between two statements. Through
   * transaction pooling the unlock may run on another server connection than the lock, which
   * then stays held on a pooled connection, and the next process to start waits on it (an hour,
   * Kysely's lock_timeout): one of three processes started side by side never came up in 3 of 8
   * rounds before migrations went over DATABASE_LISTEN_URL (src/db/connect.ts onDirectConnection).
   */
  it('the processes migrated over DATABASE_LISTEN_URL: no session keeps the lock of the migrator, and migrating needs no PgBouncer', async () => {
    const { rows } = await sql<{ held: number }>`
      select count(*)::int as held from pg_locks l join pg_stat_activity a using (pid)
      where l.locktype = 'advisory' and a.datname = current_database()`.execute(testDb.handle.db)
    expect(rows).toEqual([{ held: 0 }])

    const nobody = `postgres://postgres@127.0.0.1:${await freePort()}/gatehouse`
    const run = await runBuiltCli({ DATABASE_URL: nobody, DATABASE_LISTEN_URL: testDb.url! }, 'migrate')
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'The database is up to date.\n' })
  })

  const newToken = () => createAccessToken(testDb.handle.db, { userId: user.id, applicationId: app.id })

  it('a token revoked through one process is refused by the introspection of the other two once the notice arrives', async () => {
    const [first, ...others] = processes
    for (let i = 0; i < 5; i++) {
      const tok: AccessTokenFixture = await newToken()
      for (const p of others) expect(await isActive(p.url, rs, tok.token)).toBe(true)
      await revokeThrough(first!.url, app, tok)
      // The event, not its speed (NOTICE_WAIT_MS is a safety net; docs/decisions/003-revocation-propagation.md).
      await Promise.all(others.map((p) => msUntil(async () => !(await isActive(p.url, rs, tok.token)), NOTICE_WAIT_MS, undefined, 10)))
    }
  })

  it('a code raced by the three processes is exchanged exactly once', async () => {
    for (let round = 0; round < 3; round++) {
      const { code, verifier } = await issueCode()
      const answers = await Promise.all(processes.map((p) => exchange(p.url, code, verifier)))
      expect(answers.map((a) => a.status).sort()).toEqual([200, 400, 400])
      for (const a of answers.filter((x) => x.status === 400)) expect(a.body).toMatchObject({ error: 'invalid_grant' })
    }
  })

  it('while PgBouncer is down requests answer 503 with Retry-After, and 200 once it is back', async () => {
    const [p] = processes
    await bouncer.kill()
    try {
      // A token no cache holds: answering needs the database.
      const tok = await newToken()
      const res = await introspect(p!.url, tok.token)
      expect(res.status, await res.clone().text()).toBe(503)
      expect(res.headers.get('retry-after')).toBe('2')
    } finally {
      await bouncer.restart()
    }
    const tok = await newToken()
    await expect.poll(async () => (await introspect(p!.url, tok.token)).status, { interval: 100 }).toBe(200)
    for (const q of processes) expect(await isActive(q.url, rs, tok.token)).toBe(true)
  })

  /*
   * Why DATABASE_PREPARED_STATEMENTS exists: through one shared server connection, a second
   * client preparing the statement the first already prepared there is refused, since PgBouncer
   * 1.18 hands server connections to clients without their prepared statements in mind.
   */
  it('named prepared statements fail through transaction pooling; unnamed ones do not', async () => {
    const shape = (h: Awaited<ReturnType<typeof createDatabase>>) =>
      h.db.selectFrom('users').select('id').where('id', '=', user.id).execute()
    const open = (preparedStatements: boolean) =>
      Promise.all([0, 1].map(() => createDatabase({ url: bouncer.url('gatehouse_one'), pool: { max: 1 }, preparedStatements })))

    const named = await open(true)
    try {
      await shape(named[0]!)
      await expect(shape(named[1]!)).rejects.toThrow(/prepared statement "gh_[0-9a-f]+" already exists/)
    } finally {
      await Promise.all(named.map((h) => h.close()))
    }

    const unnamed = await open(false)
    try {
      for (const h of [...unnamed, ...unnamed]) expect(await shape(h)).toEqual([{ id: user.id }])
    } finally {
      await Promise.all(unnamed.map((h) => h.close()))
    }
  })

  async function issueCode(): Promise<{ code: string; verifier: string }> {
    const code = randomBytes(32).toString('base64url')
    const verifier = randomBytes(32).toString('base64url')
    const now = new Date()
    await testDb.handle.db
      .insertInto('authorization_codes')
      .values({
        code_hash: sha256Hex(code),
        application_id: app.id,
        user_id: user.id,
        scopes: ['read'],
        redirect_uri: 'https://app.example.com/callback',
        code_challenge: sha256Base64Url(verifier),
        code_challenge_method: 'S256',
        created_at: now,
        expires_at: new Date(now.getTime() + 600_000),
      })
      .execute()
    return { code, verifier }
  }

  async function exchange(base: string, code: string, verifier: string): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`${base}/oauth/token`, {
      method: 'POST',
      headers: { authorization: basicAuth(app.clientId, app.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: 'https://app.example.com/callback',
        code_verifier: verifier,
      }).toString(),
    })
    return { status: res.status, body: await res.json() }
  }

  const introspect = (base: string, token: string) =>
    fetch(`${base}/oauth/introspect`, {
      method: 'POST',
      headers: { authorization: basicAuth(rs.clientId, rs.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${token}`,
    })
})
