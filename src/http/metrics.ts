import type { FastifyInstance, FastifyRequest, onResponseHookHandler, onSendHookHandler } from 'fastify'
import { isIP } from 'node:net'
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client'
import { constantTimeEqual } from '../lib/crypto.js'
import type { Probes } from '../services.js'
import { RequestMetrics } from './request-metrics.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** When the request's first hook ran (performance.now()), or COUNTED once /metrics has it. */
    metricsStartedAt: number
  }
  interface FastifyContextConfig {
    /** The route hijacks its reply to stream: /metrics counts it when the stream ends. */
    streamed?: boolean
  }
}

/** A request /metrics has counted: never a time, which performance.now() never makes negative. */
const COUNTED = -1

/**
 * Prometheus metrics at GET /metrics: request counts and latencies by route pattern (never
 * the raw URL, which can carry secrets and has unbounded cardinality), the database's
 * availability and the requests refused for its sake, the janitor's work, audit events that could
 * not be written, plus process metrics. What the services count is read through `probes` alone, at
 * each scrape (docs/architecture.md "Composition root").
 * One registry per app, so several apps in one process (tests) do not collide.
 */
export function registerMetrics(app: FastifyInstance, probes: Probes, metricsToken: string | undefined): onSendHookHandler {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const requests = new RequestMetrics()

  new Gauge({
    name: 'gatehouse_database_up',
    help: '1 while the database answers, 0 during an outage (docs/operating/backups-and-upgrades.md "Failures and recovery").',
    registers: [registry],
    collect() {
      this.set(probes.databaseUp ? 1 : 0)
    },
  })
  registerServiceMetrics(registry, probes)
  const countUnmatched = countRequests(app, requests)

  app.get('/metrics', async (request, reply) => {
    if (!mayScrape(request, metricsToken)) {
      return reply
        .code(403)
        .type('text/plain; charset=utf-8')
        .send(metricsToken === undefined ? 'Only a loopback client may read /metrics while METRICS_TOKEN is unset.\n' : 'Forbidden.\n')
    }
    return reply.type(registry.contentType).send(`${await registry.metrics()}\n${requests.exposition()}`)
  })
  return countUnmatched
}

/**
 * Counts and times every request of `app` into `requests`. Returns the hook that counts the
 * not-found handler's answers, for the context that sets the handler: that handler has no route
 * of its own to count them.
 */
function countRequests(app: FastifyInstance, requests: RequestMetrics): onSendHookHandler {
  // A request is counted when its answer is sent (onSend), timed from its first hook. Not in
  // onResponse: a hook there makes Fastify listen for every response's `finish` and `error`
  // events (docs/decisions/016-hot-path-rules.md). Each route counts
  // its answers under its own pattern, taken when the route is added, with the first of the
  // route's own onSend hooks (after its contexts'): Fastify builds an object of the route's
  // options at every read of `request.routeOptions`. A route that hijacks its reply to stream never sends through
  // Fastify: `config.streamed` counts it when the stream ends, unless it was refused with an
  // answer, which onSend has counted.
  app.decorateRequest('metricsStartedAt', 0)
  const record = (request: FastifyRequest, route: string, status: number) => {
    requests.record(request.method, route, status, (performance.now() - request.metricsStartedAt) / 1000)
    request.metricsStartedAt = COUNTED
  }
  app.addHook('onRequest', function startTiming(request, _reply, done) {
    request.metricsStartedAt = performance.now()
    done()
  })
  app.addHook('onRoute', (route) => {
    const pattern = route.url
    const countAnswer: onSendHookHandler = function countAnswer(request, reply, payload, done) {
      record(request, pattern, reply.statusCode)
      done(null, payload)
    }
    route.onSend = [countAnswer, ...[route.onSend ?? []].flat()]
    if (route.config?.streamed !== true) return
    const counted: onResponseHookHandler = function countStreamed(request, reply, done) {
      if (request.metricsStartedAt !== COUNTED) record(request, pattern, reply.statusCode)
      done()
    }
    route.onResponse = [...[route.onResponse ?? []].flat(), counted]
  })
  return function countUnmatched(request, reply, payload, done) {
    if (request.is404) record(request, 'unmatched', reply.statusCode)
    done(null, payload)
  }
}

/** The gauges and totals the services keep for the process (docs/operating/backups-and-upgrades.md "Failures and recovery", docs/operating/limits.md, docs/operating/admin.md "Audit log"). */
function registerServiceMetrics(registry: Registry, probes: Probes): void {
  // Totals the services keep for the process; each scrape copies them.
  const copied = (name: string, help: string, read: () => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset()
        this.inc(read())
      },
    })
  copied(
    'gatehouse_database_refused_requests_total',
    'Requests answered 503 because the database could not serve them.',
    () => probes.refusedRequests,
  )
  new Counter({
    name: 'gatehouse_janitor_rows_removed_total',
    help: 'Expired rows the janitor of this process deleted, by table (docs/operating/limits.md).',
    labelNames: ['table'] as const,
    registers: [registry],
    collect() {
      this.reset()
      for (const [table, n] of Object.entries(probes.janitorRowsRemoved)) this.inc({ table }, n)
    },
  })
  copied(
    'gatehouse_janitor_failed_runs_total',
    'Janitor runs that failed (each is retried at the next interval).',
    () => probes.janitorFailedRuns,
  )
  copied(
    'gatehouse_audit_events_unrecorded_total',
    'Audit events this process could not write (each is logged once; the action it records went ahead).',
    () => probes.auditEventsUnrecorded,
  )
  copied(
    'gatehouse_tokens_evicted_total',
    'Live tokens this process revoked to keep MAX_TOKENS_PER_GRANT (docs/operating/limits.md).',
    () => probes.tokensEvicted,
  )
  copied(
    'gatehouse_token_quota_failures_total',
    'MAX_TOKENS_PER_GRANT statements that failed; each grant concerned is checked again at its next token.',
    () => probes.tokenQuotaFailures,
  )
}

/**
 * Metrics say how busy each route is, which accounts fail to log in how often and when the
 * database is down: worth something to an attacker. With METRICS_TOKEN the scraper sends it as
 * a bearer token (RFC 6750 2.1), compared in constant time; without it, only a client on this
 * machine is answered. The client is `request.ip`, so behind a TRUST_PROXY proxy on the same
 * host a scrape forwarded from outside is still refused.
 */
function mayScrape(request: FastifyRequest, token: string | undefined): boolean {
  if (token === undefined) return isLoopback(request.ip)
  const match = /^Bearer ([\x21-\x7e]+)$/i.exec(request.headers.authorization ?? '')
  return match !== null && constantTimeEqual(match[1]!, token)
}

function isLoopback(address: string): boolean {
  const v4 = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address
  return v4 === '::1' || (isIP(v4) === 4 && v4.startsWith('127.'))
}
