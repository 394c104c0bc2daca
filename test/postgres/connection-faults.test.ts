import { Writable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { connectionLost } from '../../src/db/availability.js'
import { type DatabaseHandle, createDatabase } from '../../src/db/connect.js'
import { type AssembledServices, createServices } from '../../src/services.js'
import { BrowserSession } from '../helpers/browser-session.js'
import { TEST_SECRET_KEY } from '../helpers/app.js'
import { type TestDatabase, createTestDatabase, serverUrl } from '../helpers/db.js'
import { basicAuth, createAccessToken, createApplication, createUser } from '../helpers/factories.js'
import { type TcpProxy, relayDatabase } from '../helpers/tcp-proxy.js'
import { Mailbox } from '../helpers/mailbox.js'

/*
 * Faults of the connections to PostgreSQL, inside one process (test/faults/ has the same
 * against a running Gatehouse process under load). Before resilientPool, the first two tests
 * ended the test worker with "Unhandled 'error' event" (docs/operating/backups-and-upgrades.md "Failures and recovery").
 */

async function adminQuery(text: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: serverUrl })
  await client.connect()
  try {
    return await client.query(text, values)
  } finally {
    await client.end()
  }
}

const terminate = (pid: number) => adminQuery('select pg_terminate_backend($1)', [pid])

/** Resolves once the backend has gone, so that its client has heard of it. */
async function gone(pid: number): Promise<void> {
  await expect.poll(async () => (await adminQuery('select 1 from pg_stat_activity where pid = $1', [pid])).rowCount).toBe(0)
}

describe('a connection that dies while checked out (needs TEST_DATABASE_URL)', () => {
  let testDb: TestDatabase

  beforeAll(async () => {
    testDb = await createTestDatabase()
  })
  afterAll(async () => {
    await testDb?.destroy()
  })

  it('pg_terminate_backend inside a transaction fails that transaction only, and the pool carries on', async () => {
    const { db } = testDb.handle
    const failure = await db
      .transaction()
      .execute(async (trx) => {
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)
        await terminate(rows[0]!.pid)
        await gone(rows[0]!.pid)
        await sql`select 1`.execute(trx)
      })
      .then(
        () => undefined,
        (err: unknown) => err,
      )
    expect(connectionLost(failure)).toBe(true)
    const { rows } = await sql<{ one: number }>`select 1 as one`.execute(db)
    expect(rows).toEqual([{ one: 1 }])
  })

  it('a checked-out connection whose backend ends between two queries does not end the process', async () => {
    const { db } = testDb.handle
    const outcome = await db.connection().execute(async (conn) => {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(conn)
      await terminate(rows[0]!.pid)
      // The error arrives while no query is running: the case pg's pool never listened for.
      await gone(rows[0]!.pid)
      return 'survived'
    })
    expect(outcome).toBe('survived')
    expect((await sql<{ one: number }>`select 1 as one`.execute(db)).rows).toEqual([{ one: 1 }])
  })
})

describe('an outage seen through the app (needs TEST_DATABASE_URL)', () => {
  let testDb: TestDatabase
  let proxy: TcpProxy
  let relayed: DatabaseHandle
  let services: AssembledServices
  let app: FastifyInstance
  let logLines: Array<{ level: number; msg: string; [k: string]: unknown }>
  let client: Awaited<ReturnType<typeof createApplication>>
  let cached: string
  let uncached: string
  let session: BrowserSession

  beforeAll(async () => {
    testDb = await createTestDatabase()
    const relay = await relayDatabase(testDb.url!)
    proxy = relay.proxy
    relayed = await createDatabase({ url: relay.url, pool: { max: 3, connectTimeoutMs: 1000 } })
    logLines = []
    const logStream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) logLines.push(JSON.parse(line))
        done()
      },
    })
    const config = loadConfig({
      LOG_LEVEL: 'info',
      PUBLIC_URL: 'http://gatehouse.test',
      LOGIN_RATE_LIMIT: '1000',
      SECRET_KEY: TEST_SECRET_KEY,
    })
    services = await createServices(config, { database: relayed, logStream, mailer: new Mailbox() })
    app = await buildApp(services)
    await app.ready()

    const { db } = testDb.handle
    const user = await createUser(db)
    client = await createApplication(db)
    cached = (await createAccessToken(db, { userId: user.id, applicationId: client.id })).token
    uncached = (await createAccessToken(db, { userId: user.id, applicationId: client.id })).token
    session = await new BrowserSession(app).signUpAndLogIn(`outage-${Date.now()}@example.com`)
  })
  afterEach(() => proxy.restore())
  afterAll(async () => {
    await app?.close()
    await services?.close()
    await relayed?.close()
    await proxy?.close()
    await testDb?.destroy()
  })

  const introspect = (token: string) =>
    app.inject({
      method: 'POST',
      url: '/oauth/introspect',
      headers: { authorization: basicAuth(client.clientId, client.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
      payload: `token=${token}`,
    })
  const metric = async (name: string) => {
    const text = (await app.inject('/metrics')).body
    return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1])
  }

  it('answers 503 with Retry-After while the database is unreachable, and 200 again as soon as it is back', async () => {
    expect((await introspect(cached)).json()).toMatchObject({ active: true })
    const errorsBefore = logLines.filter((l) => l.level >= 50).length

    proxy.cut()

    const revoke = await app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      headers: { authorization: basicAuth(client.clientId, client.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
      payload: `token=${uncached}`,
    })
    expect(revoke.statusCode).toBe(503)
    expect(revoke.headers['retry-after']).toBe('2')
    expect(revoke.headers['cache-control']).toBe('no-store')
    expect(revoke.json()).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) })

    const token = await app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `grant_type=authorization_code&code=abc&redirect_uri=https://app.example.com/callback&client_id=${client.clientId}&client_secret=${client.clientSecret}`,
    })
    expect(token.statusCode).toBe(503)
    expect(token.json()).toMatchObject({ error: 'temporarily_unavailable' })

    const info = await app.inject({ url: '/oauth/token/info', headers: { authorization: `Bearer ${uncached}` } })
    expect(info.statusCode).toBe(503)
    expect(info.headers['retry-after']).toBe('2')

    // What the cache already holds keeps answering within its TTL.
    expect((await introspect(cached)).json()).toMatchObject({ active: true })
    expect((await introspect(uncached)).statusCode).toBe(503)

    // Pages answer an error page, never JSON, never a redirect.
    const page = await session.get('/applications')
    expect(page.statusCode).toBe(503)
    expect(page.headers['content-type']).toMatch(/^text\/html/)
    expect(page.headers['retry-after']).toBe('2')
    expect(page.body).toContain('cannot reach its database')
    const authorize = await session.get(`/oauth/authorize?response_type=code&client_id=${client.clientId}&state=s`)
    expect(authorize.statusCode).toBe(503)
    expect(authorize.headers.location).toBeUndefined()

    const ready = await app.inject('/readyz')
    expect(ready.statusCode).toBe(503)
    expect(ready.headers['retry-after']).toBe('2')
    expect((await app.inject('/healthz')).statusCode).toBe(200)
    expect(await metric('gatehouse_database_up')).toBe(0)

    proxy.restore()

    expect((await app.inject('/readyz')).statusCode).toBe(200)
    expect(await metric('gatehouse_database_up')).toBe(1)
    expect(await metric('gatehouse_database_refused_requests_total')).toBe(6)
    expect((await introspect(uncached)).json()).toMatchObject({ active: true })
    expect((await session.get('/applications')).statusCode).toBe(200)

    // Told once when it started and once when it ended; no stack trace per refused request.
    const errors = logLines.filter((l) => l.level >= 50).slice(errorsBefore)
    expect(errors.map((l) => l.msg)).toEqual(['database unreachable; requests that need it answer 503 until it is back'])
    expect(JSON.stringify(errors[0])).not.toContain('stack')
    const ended = logLines.filter((l) => l.msg === 'database reachable again')
    expect(ended).toEqual([expect.objectContaining({ level: 30, refused: 6, downMs: expect.any(Number) })])
  })

  it('reconnects the LISTEN connection once the database answers again', async () => {
    // The test before restores the database too, and its LISTEN reconnects in the background.
    // Each poll waits on the event; its timeout is a safety net, not a bound a loaded machine
    // could miss (how soon the listener is back is not asserted here).
    const event = { timeout: 15_000, interval: 5 }
    await expect.poll(() => services.bus.listening, event).toBe(true)
    proxy.cut()
    await expect.poll(() => services.bus.listening, event).toBe(false)
    expect((await app.inject('/readyz')).statusCode).toBe(503)
    proxy.restore()
    expect((await app.inject('/readyz')).statusCode).toBe(200)
    await expect.poll(() => services.bus.listening, event).toBe(true)
  })
})
