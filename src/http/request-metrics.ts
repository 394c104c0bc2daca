/**
 * The request counter and latency histogram of GET /metrics, tallied here and written in
 * Prometheus's text format (0.0.4) at each scrape, in the form prom-client writes them.
 * prom-client turns a request's labels into a hash string on every count and every observation,
 * and its counter sorts the label names again each time (counted in docs/performance.md). Here a request costs
 * two map lookups and a few additions; the label text of a route is built once.
 * The series stay bounded: the route is Fastify's pattern (or `unmatched`), never the URL, and
 * the method and status come from Node's HTTP parser and Fastify's reply.
 */

/** Upper bounds in seconds, as the histogram has had since /metrics was added. */
export const DURATION_BUCKETS: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

const REQUESTS = {
  name: 'gatehouse_http_requests_total',
  help: 'HTTP requests by method, route pattern and status code.',
}
const DURATION = {
  name: 'gatehouse_http_request_duration_seconds',
  help: 'HTTP request duration by method and route pattern.',
}

class RouteTally {
  readonly statuses = new Map<number, number>()
  /** Observations per bucket, not cumulative; the last one is above every bound (+Inf). */
  readonly inBucket: number[] = new Array<number>(DURATION_BUCKETS.length + 1).fill(0)
  sum = 0

  constructor(
    /** `method="…",route="…"`, escaped. */
    readonly labels: string,
  ) {}
}

export class RequestMetrics {
  readonly #byMethod = new Map<string, Map<string, RouteTally>>()

  record(method: string, route: string, status: number, seconds: number): void {
    let routes = this.#byMethod.get(method)
    if (routes === undefined) this.#byMethod.set(method, (routes = new Map()))
    let tally = routes.get(route)
    if (tally === undefined) routes.set(route, (tally = new RouteTally(`method="${labelValue(method)}",route="${labelValue(route)}"`)))
    tally.statuses.set(status, (tally.statuses.get(status) ?? 0) + 1)
    // A bucket counts the observations at or below its bound (`le`).
    let bucket = 0
    while (bucket < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[bucket]!) bucket++
    tally.inBucket[bucket]!++
    tally.sum += seconds
  }

  /** Both metrics, each with its HELP and TYPE lines, as prom-client's Registry separates metrics. */
  exposition(): string {
    const requests = [`# HELP ${REQUESTS.name} ${REQUESTS.help}`, `# TYPE ${REQUESTS.name} counter`]
    const duration = [`# HELP ${DURATION.name} ${DURATION.help}`, `# TYPE ${DURATION.name} histogram`]
    for (const routes of this.#byMethod.values()) {
      for (const tally of routes.values()) {
        for (const [status, n] of tally.statuses) requests.push(`${REQUESTS.name}{${tally.labels},status="${status}"} ${n}`)
        let cumulative = 0
        tally.inBucket.forEach((n, i) => {
          cumulative += n
          const le = i < DURATION_BUCKETS.length ? String(DURATION_BUCKETS[i]) : '+Inf'
          duration.push(`${DURATION.name}_bucket{le="${le}",${tally.labels}} ${cumulative}`)
        })
        // The +Inf bucket holds every observation: the count.
        duration.push(`${DURATION.name}_sum{${tally.labels}} ${tally.sum}`, `${DURATION.name}_count{${tally.labels}} ${cumulative}`)
      }
    }
    return `${requests.join('\n')}\n\n${duration.join('\n')}\n`
  }
}

/** A label value in the text format: backslash, double quote and line feed escaped. */
function labelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
}
