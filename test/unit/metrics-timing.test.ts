import Fastify, { type FastifyInstance } from 'fastify'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { registerMetrics } from '../../src/http/metrics.js'
import type { RowsRemoved } from '../../src/limits/janitor.js'
import { JANITOR_TABLES } from '../../src/repositories/janitor.js'
import type { Probes } from '../../src/services.js'

/*
 * What the latency histogram of /metrics times (src/http/metrics.ts): from the request's first
 * hook to the moment its answer is handed to Fastify to send (onSend), not to the end of the
 * write, which an onResponse hook would cost every request (docs/performance.md "What the counts showed"). Only performance.now()
 * is faked: the requests themselves run on real timers.
 */

/** What /metrics reads of the services, at rest: only the histogram is under test here. */
const PROBES: Probes = {
  databaseReachable: async () => true,
  refused: () => {},
  databaseUp: true,
  refusedRequests: 0,
  janitorRowsRemoved: Object.fromEntries(JANITOR_TABLES.map((t) => [t, 0])) as RowsRemoved,
  janitorFailedRuns: 0,
  auditEventsUnrecorded: 0,
  tokensEvicted: 0,
  tokenQuotaFailures: 0,
}

/** The cumulative count of `route`'s duration bucket `le`. */
function bucket(exposition: string, route: string, le: string): number {
  const line = exposition
    .split('\n')
    .find((l) => l.startsWith(`gatehouse_http_request_duration_seconds_bucket{le="${le}",method="GET",route="${route}"}`))
  if (line === undefined) throw new Error(`no bucket le=${le} for ${route}`)
  return Number(line.slice(line.lastIndexOf(' ') + 1))
}

describe('the latency histogram', () => {
  let app: FastifyInstance
  beforeEach(async () => {
    vi.useFakeTimers({ toFake: ['performance'] })
    app = Fastify()
    registerMetrics(app, PROBES, undefined)
    // The route's own onRequest hook (after the app's) takes 100 ms and its handler 200 ms; after
    // the answer is handed over, its own onSend hook (after the app's) takes five seconds more.
    app.get(
      '/slow-send',
      {
        onRequest: (_request, _reply, done) => {
          vi.advanceTimersByTime(100)
          done()
        },
        onSend: (_request, _reply, payload, done) => {
          vi.advanceTimersByTime(5_000)
          done(null, payload)
        },
      },
      async () => {
        vi.advanceTimersByTime(200)
        return { ok: true }
      },
    )
    await app.ready()
  })
  afterEach(async () => {
    await app.close()
    vi.useRealTimers()
  })

  it('times a request from its first hook to its answer (onSend), without what follows', async () => {
    expect((await app.inject('/slow-send')).statusCode).toBe(200)
    const text = (await app.inject({ url: '/metrics', remoteAddress: '127.0.0.1' })).body
    // 0.3 s: above the 0.25 bucket, within 0.5; not 5.3 s, which only +Inf would hold, nor the
    // handler's 0.2 s alone.
    expect(bucket(text, '/slow-send', '0.25')).toBe(0)
    expect(bucket(text, '/slow-send', '0.5')).toBe(1)
    const sum = /^gatehouse_http_request_duration_seconds_sum\{method="GET",route="\/slow-send"\} (\S+)$/m.exec(text)
    expect(Number(sum?.[1])).toBeCloseTo(0.3)
  })
})
