import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type TestDatabase, createTestDatabase, serverUrl } from '../helpers/db.js'
import { createAccessToken } from '../helpers/factories.js'
import { type GatehouseProcess, startGatehouse } from '../helpers/gatehouse-process.js'
import {
  type FlowParty,
  type Load,
  type Reply,
  authorize,
  codeOf,
  completeFlow,
  exchange,
  forbidden,
  introspect,
  page,
  revoke,
  seedFlowParty,
  startLoad,
  tally,
  tokenInfo,
  until,
} from '../helpers/oauth-load.js'
import { type PgAdmin, type TerminatedBackend, connectPgAdmin } from '../helpers/pg-admin.js'
import { NOTICE_WAIT_MS } from '../helpers/propagation.js'

/*
 * docs/operating/backups-and-upgrades.md "Failures and recovery" (docs/decisions/008-database-faults.md): the built server (`node dist/src/server.js`),
 * two processes on a database of their own on the CI PostgreSQL, under bounded OAuth load from
 * this file, while the database is cut from under them the way operators and DBAs do it.
 */

/** Concurrent keep-alive loops of authorize → token → introspect → revoke. */
const LOOPS = 8
/** How long the database refuses connections in the outage test. */
const OUTAGE_MS = 2_000
const OUTAGE_LINE = 'database unreachable; requests that need it answer 503 until it is back'
const BACK_LINE = 'database reachable again'
/**
 * How long a test waits for an event (a process answering again, a listener back) before it
 * fails: a safety net, not the assertion, so that a loaded machine slows the test but cannot
 * fail it. How soon each event comes is what `npm run bench` and `npm run bench:propagation`
 * measure.
 */
const EVENT_WAIT_MS = 15_000

interface LogLine {
  level: number
  msg: string
  /** Milliseconds since the epoch (pino's `time`). */
  time: number
  [field: string]: unknown
}

/** The JSON log lines a process wrote on stdout from offset `from` on. */
function logLines(p: GatehouseProcess, from = 0): LogLine[] {
  const lines: LogLine[] = []
  for (const text of p.stdout().slice(from).split('\n')) {
    if (!text.startsWith('{')) continue
    try {
      lines.push(JSON.parse(text) as LogLine)
    } catch {
      // a line still being written
    }
  }
  return lines
}

/** Lines at level error (50) or above, other than the outage's own. */
const alarming = (lines: LogLine[]) => lines.filter((l) => l.level >= 50 && l.msg !== OUTAGE_LINE)

/** GET `path`; when the process gives no answer at all, says how it ended. */
async function get(p: GatehouseProcess, path: string): Promise<Response> {
  try {
    return await fetch(`${p.url}${path}`)
  } catch (err) {
    await Promise.race([p.exited, new Promise((resolve) => setTimeout(resolve, 1_000))])
    const state = p.running() ? 'still running' : `exited ${JSON.stringify(await p.exited)}`
    throw new Error(`GET ${p.url}${path}: no answer (${(err as Error).message}); the process is ${state}:\n${p.output().slice(-2_500)}`)
  }
}

/** A value of GET /metrics, undefined if it is not there. */
async function metric(p: GatehouseProcess, name: string): Promise<number | undefined> {
  const text = await (await get(p, '/metrics')).text()
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text)
  return m ? Number(m[1]) : undefined
}

const readyz = async (p: GatehouseProcess) => {
  const res = await get(p, '/readyz')
  await res.arrayBuffer()
  return { status: res.status, retryAfter: res.headers.get('retry-after') }
}

const show = (replies: readonly Reply[]) =>
  replies
    .slice(0, 10)
    .map((r) => `${r.kind} via ${r.base}: ${r.status} retry-after=${r.retryAfter} ${r.body}`)
    .join('\n')

describe('Gatehouse survives its database (docs/operating/backups-and-upgrades.md "Failures and recovery"; needs TEST_DATABASE_URL)', () => {
  let testDb: TestDatabase
  let name: string
  let admin: PgAdmin
  let party: FlowParty
  let A: GatehouseProcess
  let B: GatehouseProcess
  let load: Load | undefined

  /** Where each process's log stood when the current test began. */
  const logFrom = new Map<GatehouseProcess, number>()

  /** The processes are alive and have logged nothing at error level in this test but the outage line. */
  function expectAlive() {
    for (const p of [A, B]) {
      expect(p.running(), `process ${p.url} exited:\n${p.output().slice(-3000)}`).toBe(true)
      expect(alarming(logLines(p, logFrom.get(p))), p.output().slice(-3000)).toEqual([])
    }
  }

  /** Waits until the load has completed `n` more whole flows: the processes serve again. */
  async function progressed(n: number, timeoutMs = 10_000) {
    const target = load!.flows() + n
    await until(
      () => load!.flows() >= target || load!.running() < LOOPS,
      timeoutMs,
      `${n} more flows (at ${load!.flows()}; ${JSON.stringify(tally(load!.replies))})`,
    )
    if (load!.running() < LOOPS) {
      // A request got no answer at all: say which process died, and how.
      await Promise.race([Promise.all([A.exited, B.exited]), new Promise((resolve) => setTimeout(resolve, 1_000))])
      const dead = [A, B].filter((p) => !p.running())
      const how = await Promise.all(
        dead.map(async (p) => `${p.url} exited ${JSON.stringify(await p.exited)}:\n${p.output().slice(-2_500)}`),
      )
      throw new Error(`a load loop ended: a request got no answer\n${show(forbidden(load!.replies))}\n${how.join('\n')}`)
    }
  }

  // One user and one client drive all the load: the per-(user, application) quotas (docs/operating/limits.md, tested in test/integration/quotas.test.ts) would refuse codes and revoke tokens.
  const start = () =>
    startGatehouse(
      { DATABASE_URL: testDb.url!, DATABASE_POOL_MAX: '6', LOG_LEVEL: 'info', CODE_ISSUE_LIMIT: '100000', MAX_TOKENS_PER_GRANT: '10000' },
      { built: true },
    )

  beforeAll(async () => {
    testDb = await createTestDatabase()
    name = new URL(testDb.url!).pathname.slice(1)
    admin = await connectPgAdmin(serverUrl!)
    party = await seedFlowParty(testDb.handle.db)
    ;[A, B] = await Promise.all([start(), start()])
  })
  // Each test on live processes, so that one fault's crash does not hide what the next shows.
  // (A process that died has already failed the test it died in, in expectAlive or progressed.)
  beforeEach(async () => {
    if (!A.running()) A = await start()
    if (!B.running()) B = await start()
    for (const p of [A, B]) logFrom.set(p, p.stdout().length)
  })
  afterAll(async () => {
    await load?.stop()
    // Never leave the database locked, whatever failed.
    await admin?.allowConnections(name, true).catch(() => {})
    await admin?.close()
    await Promise.all([A?.stop(), B?.stop()])
    await testDb?.destroy()
  })

  it('pg_terminate_backend of every backend, round after round under load: still running, no 500, then everything succeeds', async () => {
    load = startLoad([A.url, B.url], party, { loops: LOOPS })
    const rounds: TerminatedBackend[][] = []
    try {
      await progressed(20)
      // At least 4 rounds, and on until one of them has cut a transaction (code exchange,
      // revocation) in the middle: the fault that used to end the process every time.
      while (rounds.length < 4 || (!rounds.some((r) => r.some((b) => b.inTransaction)) && rounds.length < 20)) {
        rounds.push(await admin.terminate(name))
        await progressed(10)
      }
    } finally {
      await load.stop()
    }
    const replies = load.replies
    const summary = {
      rounds: rounds.map((r) => `${r.length} backends, ${r.filter((b) => b.inTransaction).length} in a transaction`),
      answers: tally(replies),
      refused: replies.filter((r) => r.status === 503).length,
    }
    console.log('pg_terminate_backend under load:', JSON.stringify(summary, null, 2))

    expect(forbidden(replies), show(forbidden(replies))).toEqual([])
    expect(rounds.flat().filter((b) => b.inTransaction).length, JSON.stringify(rounds)).toBeGreaterThan(0)
    expectAlive()
    // Later requests succeed: the whole flow, through each process, nothing refused.
    for (const p of [A, B]) await completeFlow(p.url, party)
  })

  it.each(['listen', 'all'] as const)(
    'B refuses a token revoked through A once its listener is back after pg_terminate_backend of %s backends',
    async (which) => {
      const tok = await createAccessToken(testDb.handle.db, { userId: party.userId, applicationId: party.client.id })
      // Only B's cache holds the token.
      expect((await introspect(B.url, party, tok.token)).active).toBe(true)
      // Both processes listen (after the last test's faults, their listeners may still be reconnecting).
      let listening: number[] = []
      await until(async () => (listening = await admin.listenBackends(name)).length === 2, EVENT_WAIT_MS, 'A and B LISTEN')

      const terminated = await admin.terminate(name, which)
      expect(terminated.map((b) => b.pid)).toEqual(expect.arrayContaining(listening))
      // Revoked at once, while the LISTEN connections are down: B misses the notice and must
      // forget what it cached when its connection is back. A pooled connection just cut may
      // refuse the first attempt with 503 + Retry-After, as a client would retry it.
      let answered = 0
      await until(
        async () => {
          const r = await revoke(A.url, party, tok.token)
          expect([200, 503], r.body).toContain(r.status)
          answered = performance.now()
          return r.status === 200
        },
        EVENT_WAIT_MS,
        'POST /oauth/revoke through A answers 200',
      )
      // Waits on the refusal itself: how soon it comes is measured by `npm run bench:propagation`,
      // not asserted here, where a loaded machine would make it a flaky failure.
      await until(async () => (await introspect(B.url, party, tok.token)).active === false, NOTICE_WAIT_MS, 'B calls the token inactive', 5)
      const ms = performance.now() - answered
      console.log(`after pg_terminate_backend (${which}), B refused the token ${ms.toFixed(0)} ms after A confirmed the revocation`)

      // Both listeners are back.
      await until(
        async () => (await admin.listenBackends(name)).filter((pid) => !listening.includes(pid)).length === 2,
        EVENT_WAIT_MS,
        'two new LISTEN backends',
      )
      expectAlive()
    },
  )

  it('an outage: 503 + Retry-After meanwhile, never 500; /readyz 503, then 200 again; the outage told when it began and when it ended', async () => {
    // Ready: a query was answered, so no earlier outage is still open.
    await until(async () => (await readyz(A)).status === 200, EVENT_WAIT_MS, 'A ready')
    const logStart = A.stdout().length
    const refusedBefore = (await metric(A, 'gatehouse_database_refused_requests_total')) ?? 0

    // A token in A's introspection cache, one that is not, a code not yet exchanged.
    const cached = await createAccessToken(testDb.handle.db, { userId: party.userId, applicationId: party.client.id })
    const uncached = await createAccessToken(testDb.handle.db, { userId: party.userId, applicationId: party.client.id })
    expect((await introspect(A.url, party, cached.token)).active).toBe(true)
    // And one in B's cache, to be revoked through A the moment the database is back.
    const acrossTheOutage = await createAccessToken(testDb.handle.db, { userId: party.userId, applicationId: party.client.id })
    expect((await introspect(B.url, party, acrossTheOutage.token)).active).toBe(true)
    const code = codeOf(await authorize(A.url, party))
    expect(code).toBeDefined()

    load = startLoad([A.url], party, { loops: LOOPS })
    let down = 0
    let up = 0
    // The same instants on the log's clock (pino's `time`, the epoch in milliseconds).
    let downAt = 0
    let upAt = 0
    let probes: Reply[] = []
    try {
      await progressed(20)
      await admin.allowConnections(name, false)
      await admin.terminateUntilNone(name)
      down = performance.now()
      downAt = Date.now()

      // Everything that needs the database answers 503 with Retry-After: pages as HTML, the
      // OAuth endpoints as temporarily_unavailable; a cached introspection still answers.
      await until(async () => (await readyz(A)).status === 503, EVENT_WAIT_MS, '/readyz answers 503')
      const ready = await readyz(A)
      expect(ready.retryAfter).toMatch(/^\d+$/)
      expect((await get(A, '/healthz')).status).toBe(200)
      const ex = await exchange(A.url, party, code!)
      const rv = await revoke(A.url, party, uncached.token)
      const un = await introspect(A.url, party, uncached.token)
      const ca = await introspect(A.url, party, cached.token)
      const au = await authorize(A.url, party)
      const ti = await tokenInfo(A.url, uncached.token)
      const co = await page(A.url, party, '/applications')
      probes = [ex, rv, un, au, ti, co]
      for (const r of probes) {
        expect(r.status, `${r.kind}: ${r.body}`).toBe(503)
        expect(r.retryAfter, r.kind).toMatch(/^\d+$/)
      }
      for (const r of [ex, rv, un]) expect(r.error, r.kind).toBe('temporarily_unavailable')
      for (const r of [au, co]) expect(r.contentType, r.kind).toMatch(/^text\/html/)
      expect(ca.status).toBe(200)
      expect(ca.active).toBe(true)
      expect(await metric(A, 'gatehouse_database_up')).toBe(0)
      expect(await metric(A, 'gatehouse_database_refused_requests_total')).toBeGreaterThan(refusedBefore)
      // The load has met the outage too.
      await until(() => load!.replies.some((r) => r.started > down && r.status === 503), EVENT_WAIT_MS, 'the load is refused')
      // An outage long enough for the LISTEN reconnects to back off several times over (the
      // fault's own length, not a wait for an event).
      await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS - (performance.now() - down)))
    } finally {
      upAt = Date.now()
      await admin.allowConnections(name, true)
      up = performance.now()
    }
    try {
      const readyAfterMs = await until(async () => (await readyz(A)).status === 200, EVENT_WAIT_MS, '/readyz answers 200 again', 5)
      // Revocation reaches B across the outage: B's listener was down all along,
      // so it hears of this one only if it is back in time, or forgets its cache on reconnecting.
      let revokedAt = 0
      await until(
        async () => {
          const r = await revoke(A.url, party, acrossTheOutage.token)
          expect([200, 503], r.body).toContain(r.status)
          revokedAt = performance.now()
          return r.status === 200
        },
        EVENT_WAIT_MS,
        'POST /oauth/revoke through A answers 200 after the outage',
      )
      await until(
        async () => (await introspect(B.url, party, acrossTheOutage.token)).active === false,
        NOTICE_WAIT_MS,
        'B refuses the token',
        5,
      )
      const refusedAfterMs = performance.now() - revokedAt
      console.log(
        `after a ${(up - down).toFixed(0)} ms outage: /readyz 200 ${readyAfterMs.toFixed(0)} ms after ALLOW_CONNECTIONS true; ` +
          `B refused a token ${refusedAfterMs.toFixed(0)} ms after A confirmed its revocation`,
      )
      await progressed(20)
    } finally {
      await load.stop()
    }

    // Every answer to a request made wholly within the outage: 503 with Retry-After, or a cached introspection.
    const during = load.replies.filter((r) => r.started > down && r.ended < up)
    const wrong = during.filter((r) => !((r.status === 503 && r.retryAfter) || (r.kind === 'introspect' && r.status === 200)))
    expect(wrong, show(wrong)).toEqual([])
    expect(forbidden(load.replies), show(forbidden(load.replies))).toEqual([])
    console.log('outage:', JSON.stringify({ during: tally(during), all: tally(load.replies) }))

    // Nothing the outage refused happened: the code is still good and the token still active.
    const redeemed = await exchange(A.url, party, code!)
    expect(redeemed.status, redeemed.body).toBe(200)
    expect((await introspect(A.url, party, uncached.token)).active).toBe(true)

    // One line when it started, one when it ended, nothing else at error level. While the
    // connections are being cut, a connection that was opening as ALLOW_CONNECTIONS changed may
    // still get in and answer, and be cut a moment later: the database was then briefly back,
    // and the log says so. Once every connection is gone and none can open, the state holds
    // until the database lets connections in again; then one line says it is back.
    await until(() => logLines(A, logStart).some((l) => l.msg === BACK_LINE && l.time >= upAt), EVENT_WAIT_MS, `"${BACK_LINE}" logged`)
    const lines = logLines(A, logStart)
    const told = lines.filter((l) => l.msg === OUTAGE_LINE || l.msg === BACK_LINE)
    expect(
      told.map((l) => l.msg),
      'down and back alternate, from the first outage to the last return',
    ).toEqual(told.map((_, i) => (i % 2 === 0 ? OUTAGE_LINE : BACK_LINE)))
    expect(told.length % 2).toBe(0)
    // While the outage held, the state changed at most once, and only to down: a process with no
    // statement in flight as the connections were cut meets the outage at its next one.
    const whileDown = told.filter((l) => l.time > downAt && l.time < upAt).map((l) => l.msg)
    expect([[], [OUTAGE_LINE]], `told while the outage held: ${JSON.stringify(whileDown)}`).toContainEqual(whileDown)
    const back = told.at(-1)!
    expect(back.time).toBeGreaterThanOrEqual(upAt)
    for (const l of told) expect(l.level).toBe(l.msg === OUTAGE_LINE ? 50 : 30)
    expect(back).toMatchObject({ downMs: expect.any(Number), refused: expect.any(Number) })
    expect(back.refused).toBeGreaterThan(0)
    expect(lines.filter((l) => l.level >= 50 && l.msg !== OUTAGE_LINE)).toEqual([])

    expect(await metric(A, 'gatehouse_database_up')).toBe(1)
    const refusedInOutages = told.filter((l) => l.msg === BACK_LINE).reduce((n, l) => n + (l.refused as number), 0)
    expect(await metric(A, 'gatehouse_database_refused_requests_total')).toBeGreaterThanOrEqual(refusedBefore + refusedInOutages)
    expectAlive()
    for (const p of [A, B]) await completeFlow(p.url, party)
  })
})
