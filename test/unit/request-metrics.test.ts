import fc from 'fast-check'
import { Counter, Histogram, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { DURATION_BUCKETS, RequestMetrics } from '../../src/http/request-metrics.js'

interface Observation {
  method: string
  route: string
  status: number
  seconds: number
}

/** The same observations through prom-client, as /metrics wrote them before RequestMetrics. */
async function promClientText(observations: readonly Observation[]): Promise<string> {
  const registry = new Registry()
  const requests = new Counter({
    name: 'gatehouse_http_requests_total',
    help: 'HTTP requests by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  })
  const duration = new Histogram({
    name: 'gatehouse_http_request_duration_seconds',
    help: 'HTTP request duration by method and route pattern.',
    labelNames: ['method', 'route'] as const,
    buckets: [...DURATION_BUCKETS],
    registers: [registry],
  })
  for (const o of observations) {
    requests.inc({ method: o.method, route: o.route, status: String(o.status) })
    duration.observe({ method: o.method, route: o.route }, o.seconds)
  }
  return registry.metrics()
}

function tallied(observations: readonly Observation[]): string {
  const metrics = new RequestMetrics()
  for (const o of observations) metrics.record(o.method, o.route, o.status, o.seconds)
  return metrics.exposition()
}

/** Each metric's lines, sorted: the two writers may list series in another order, never other series. */
function byMetric(text: string): string[][] {
  return text
    .trimEnd()
    .split('\n\n')
    .map((block) => block.split('\n').sort())
}

const observation = fc.record({
  method: fc.constantFrom('GET', 'POST', 'HEAD'),
  route: fc.oneof(fc.constantFrom('/oauth/token', '/login', 'unmatched'), fc.string({ maxLength: 12 })),
  status: fc.constantFrom(200, 302, 400, 401, 503),
  // Bounds themselves included: a bucket counts what is at or below its bound.
  seconds: fc.oneof(fc.constantFrom(...DURATION_BUCKETS, 0, 3), fc.double({ min: 0, max: 5, noNaN: true })),
})

describe('RequestMetrics', () => {
  it('writes what prom-client wrote for the same requests', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 40 }), async (observations) => {
        expect(byMetric(tallied(observations))).toEqual(byMetric(await promClientText(observations)))
      }),
    )
  })

  it('counts a request per route and status, its duration in cumulative buckets', () => {
    const text = tallied([
      { method: 'POST', route: '/oauth/token', status: 200, seconds: 0.002 },
      { method: 'POST', route: '/oauth/token', status: 400, seconds: 0.0025 },
      { method: 'POST', route: '/oauth/token', status: 200, seconds: 4 },
    ])
    expect(text).toContain('gatehouse_http_requests_total{method="POST",route="/oauth/token",status="200"} 2\n')
    expect(text).toContain('gatehouse_http_requests_total{method="POST",route="/oauth/token",status="400"} 1\n')
    expect(text).toContain('gatehouse_http_request_duration_seconds_bucket{le="0.001",method="POST",route="/oauth/token"} 0\n')
    expect(text).toContain('gatehouse_http_request_duration_seconds_bucket{le="0.0025",method="POST",route="/oauth/token"} 2\n')
    expect(text).toContain('gatehouse_http_request_duration_seconds_bucket{le="2.5",method="POST",route="/oauth/token"} 2\n')
    expect(text).toContain('gatehouse_http_request_duration_seconds_bucket{le="+Inf",method="POST",route="/oauth/token"} 3\n')
    expect(text).toContain('gatehouse_http_request_duration_seconds_count{method="POST",route="/oauth/token"} 3\n')
  })

  it('escapes a label value that carries a quote, a backslash or a line feed', () => {
    const text = tallied([{ method: 'GET', route: '/a"b\\c\nd', status: 404, seconds: 0 }])
    expect(text).toContain('route="/a\\"b\\\\c\\nd",status="404"} 1\n')
    expect(text.split('\n').every((line) => line === '' || /^(# (HELP|TYPE) )?gatehouse_/.test(line))).toBe(true)
  })

  it('writes the HELP and TYPE lines before any request', () => {
    expect(tallied([])).toBe(
      [
        '# HELP gatehouse_http_requests_total HTTP requests by method, route pattern and status code.',
        '# TYPE gatehouse_http_requests_total counter',
        '',
        '# HELP gatehouse_http_request_duration_seconds HTTP request duration by method and route pattern.',
        '# TYPE gatehouse_http_request_duration_seconds histogram',
        '',
      ].join('\n'),
    )
  })
})
