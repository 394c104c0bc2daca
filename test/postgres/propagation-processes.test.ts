import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { createServices } from '../../src/services.js'
import { loadConfig } from '../../src/config.js'
import { type DatabaseHandle, createDatabase } from '../../src/db/connect.js'
import { manualClock } from '../../src/lib/clock.js'
import { REVOCATION_CHANNEL } from '@gatehouse/verifier/shared'
import { type Verifier, createVerifier } from '@gatehouse/verifier'
import { TEST_ISSUER, TEST_SECRET_KEY } from '../helpers/app.js'
import { type TestDatabase, createTestDatabase } from '../helpers/db.js'
import { type AccessTokenFixture, type ApplicationFixture, type UserFixture, basicAuth, createAccessToken } from '../helpers/factories.js'
import { type GatehouseProcess, startGatehouses } from '../helpers/gatehouse-process.js'
import {
  NOTICE_WAIT_MS,
  awaitNotice,
  isActive,
  msUntil,
  refuses,
  revokeThrough,
  seed,
  summarize,
  tokenInfoStatus,
} from '../helpers/propagation.js'
import { type TcpProxy, relayDatabase } from '../helpers/tcp-proxy.js'
import { Mailbox } from '../helpers/mailbox.js'

/*
 * A revocation reaches every cache through its notice (docs/decisions/003-revocation-propagation.md):
 * other Gatehouse instances, database-mode verifiers (LISTEN) and introspection-mode
 * verifiers (the revocation stream). Across processes needs a Postgres server; with PGlite the
 * same is shown between two app instances sharing the one embedded database.
 *
 * The propagation time is measured and logged, not asserted: the one-second target of 003 is a
 * product figure (docs/resource-apis.md "Revocation propagation, measured", `npm run bench:propagation`), and as
 * a pass/fail bound it would let a loaded machine fail the suite. What is asserted is the event:
 * each cache refuses the token once the notice arrives, within NOTICE_WAIT_MS, a safety net far
 * below the caches' TTL, so a lost notice still fails the test.
 */

describe('two Gatehouse processes on one Postgres (needs TEST_DATABASE_URL)', () => {
  let testDb: TestDatabase
  let A: GatehouseProcess
  let B: GatehouseProcess
  let user: UserFixture
  let app: ApplicationFixture
  let rs: ApplicationFixture
  /** Introspects through A and follows A's revocation stream. */
  let streamVerifier: Verifier
  /** Shares the database: its own pool and LISTEN connection. */
  let dbVerifier: Verifier

  const newToken = () => createAccessToken(testDb.handle.db, { userId: user.id, applicationId: app.id })

  /** Caches everywhere hold the token as valid. */
  async function warm(tok: AccessTokenFixture) {
    expect((await streamVerifier.verify(`Bearer ${tok.token}`)).ok).toBe(true)
    expect((await dbVerifier.verify(`Bearer ${tok.token}`)).ok).toBe(true)
    expect(await tokenInfoStatus(B.url, tok.token)).toBe(200)
  }

  /** Revokes through B and returns how long each cache took to refuse the token (measured, not asserted). */
  async function revokeAndMeasure(tok: AccessTokenFixture) {
    const started = performance.now()
    await revokeThrough(B.url, app, tok)
    const [stream, database, introspection] = await Promise.all([
      msUntil(refuses(streamVerifier, tok.token), NOTICE_WAIT_MS, started),
      msUntil(refuses(dbVerifier, tok.token), NOTICE_WAIT_MS, started),
      msUntil(async () => !(await isActive(A.url, rs, tok.token)), NOTICE_WAIT_MS, started),
    ])
    expect(await tokenInfoStatus(B.url, tok.token)).toBe(401)
    return { stream, database, introspection }
  }

  const listenBackends = async (): Promise<number[]> => {
    const { rows } = await sql<{ pid: number }>`
      select pid from pg_stat_activity
      where datname = current_database() and query ilike ${`listen %${REVOCATION_CHANNEL}%`}`.execute(testDb.handle.db)
    return rows.map((r) => r.pid)
  }

  beforeAll(async () => {
    testDb = await createTestDatabase()
    const env = { DATABASE_URL: testDb.url!, DATABASE_POOL_MAX: '4' }
    ;[A, B] = (await startGatehouses(2, env)) as [GatehouseProcess, GatehouseProcess]
    ;({ user, application: app, resourceServer: rs } = await seed(testDb.handle.db))
    streamVerifier = createVerifier({
      mode: 'introspection',
      introspectionUrl: `${A.url}/oauth/introspect`,
      revocationStreamUrl: `${A.url}/oauth/revocations/stream`,
      clientId: rs.clientId,
      clientSecret: rs.clientSecret,
    })
    dbVerifier = createVerifier({ mode: 'database', database: testDb.url! })
    await Promise.all([streamVerifier.ready(), dbVerifier.ready()])
  })
  afterAll(async () => {
    await streamVerifier?.close()
    await dbVerifier?.close()
    await Promise.all([A?.stop(), B?.stop()])
    await testDb?.destroy()
  })

  it('a verifier warmed through one process refuses a token revoked through the other once the notice arrives', async () => {
    const samples = { stream: [] as number[], database: [] as number[], introspection: [] as number[] }
    for (let i = 0; i < 20; i++) {
      const tok = await newToken()
      await warm(tok)
      const ms = await revokeAndMeasure(tok)
      samples.stream.push(ms.stream)
      samples.database.push(ms.database)
      samples.introspection.push(ms.introspection)
    }
    const fmt = (s: number[]) => {
      const { n, median, worst } = summarize(s)
      return `median ${median.toFixed(1)} ms, worst ${worst.toFixed(1)} ms (n=${n})`
    }
    console.log(
      [
        'revocation through B → refused by:',
        `  introspection-mode verifier via A's stream: ${fmt(samples.stream)}`,
        `  database-mode verifier (LISTEN):            ${fmt(samples.database)}`,
        `  A's own introspection cache:                ${fmt(samples.introspection)}`,
      ].join('\n'),
    )
  })

  it('after pg_terminate_backend on every LISTEN connection, everyone reconnects and refuses once the notice arrives', async () => {
    const before = await listenBackends()
    expect(before).toHaveLength(3) // A, B and the database-mode verifier
    const duringOutage = await newToken()
    const afterReconnect = await newToken()
    await warm(duringOutage)
    await warm(afterReconnect)

    await sql`select pg_terminate_backend(pid) from pg_stat_activity where pid in (${sql.join(before)})`.execute(testDb.handle.db)
    // Revoked while the connections are down: the notice may be lost, but each cache forgets
    // everything when its connection is back.
    await revokeAndMeasure(duringOutage)

    await expect
      .poll(async () => (await listenBackends()).filter((pid) => !before.includes(pid)).length, { timeout: NOTICE_WAIT_MS, interval: 50 })
      .toBe(3)
    await warm(afterReconnect)
    await revokeAndMeasure(afterReconnect)
  })

  describe('while the notification connection is down', () => {
    let proxy: TcpProxy
    let listenVia: DatabaseHandle
    let closeApp: () => Promise<void>
    let introspectC: (token: string) => Promise<boolean>
    let verifier: Verifier
    const clock = manualClock(new Date())

    beforeAll(async () => {
      // Queries go straight to Postgres; LISTEN goes through a relay this test can cut.
      const relay = await relayDatabase(testDb.url!)
      proxy = relay.proxy
      listenVia = await createDatabase({ url: relay.url, pool: { max: 1 } })
      const database: DatabaseHandle = { ...testDb.handle, listen: listenVia.listen }

      const config = loadConfig({ LOG_LEVEL: 'silent', PUBLIC_URL: TEST_ISSUER, TOKEN_CACHE_TTL_SECONDS: '2', SECRET_KEY: TEST_SECRET_KEY })
      const services = await createServices(config, { database, clock, mailer: new Mailbox() })
      const c = await buildApp(services)
      await c.ready()
      closeApp = async () => {
        await c.close()
        await services.close()
      }
      introspectC = async (token) => {
        const res = await c.inject({
          method: 'POST',
          url: '/oauth/introspect',
          headers: { authorization: basicAuth(rs.clientId, rs.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
          payload: `token=${token}`,
        })
        return res.json().active
      }
      verifier = createVerifier({ mode: 'database', database, cacheTtlSeconds: 2, now: () => clock().getTime() })
      await verifier.ready()
    })
    afterAll(async () => {
      await verifier?.close()
      await closeApp?.()
      await listenVia?.close()
      await proxy?.close()
    })

    it('no cached answer outlives the TTL, and after reconnecting a revocation is refused once the notice arrives', async () => {
      const tok = await newToken()
      expect(await introspectC(tok.token)).toBe(true)
      expect((await verifier.verify(`Bearer ${tok.token}`)).ok).toBe(true)

      proxy.cut()
      await expect.poll(() => verifier.notifications).toBe('disconnected')
      // A listener beside the relay hears the notice: had the relay carried it, C and the
      // verifier would have heard it too, so what they still answer below is their TTL at work.
      const notice = await awaitNotice(testDb.handle, tok.digest)
      try {
        await revokeThrough(B.url, app, tok)
        await notice.heard
      } finally {
        await notice.stop()
      }
      clock.advance(1_999)
      expect(await introspectC(tok.token)).toBe(true)
      expect(verifier.verifyCached(`Bearer ${tok.token}`)).toMatchObject({ ok: true })
      clock.advance(1)
      expect(await introspectC(tok.token)).toBe(false)
      expect(await verifier.verify(`Bearer ${tok.token}`)).toMatchObject({ ok: false, status: 401 })

      proxy.restore()
      await expect.poll(() => verifier.notifications, { timeout: NOTICE_WAIT_MS }).toBe('connected')
      const next = await newToken()
      expect(await introspectC(next.token)).toBe(true)
      expect((await verifier.verify(`Bearer ${next.token}`)).ok).toBe(true)
      await revokeThrough(B.url, app, next)
      await msUntil(refuses(verifier, next.token), NOTICE_WAIT_MS)
      await msUntil(async () => !(await introspectC(next.token)), NOTICE_WAIT_MS)
    })
  })
})
