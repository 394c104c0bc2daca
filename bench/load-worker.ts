import { readFileSync } from 'node:fs'
import autocannon, { type Request } from 'autocannon'
import type { RawRun } from './stats.js'
import type { LoadSpec, WorkerReply, WorkerRequest } from './load.js'

/*
 * The load generator: a separate process, pinned to its own CPU by bench/load.ts, that runs
 * autocannon on request over IPC. `prepare` loads the case's pool and warms the server up;
 * `run` is the measured run, so the parent can read /proc CPU counters right around it.
 */

const ITEM = '{item}'
/** autocannon stops on its first sampling tick after the duration: a short tick, a short overshoot. */
const SAMPLE_MS = 200
/** Cycled pools up to this size become a fixed list of prebuilt requests. */
const STATIC_MAX = 64
const pools = new Map<string, string[]>()
/** Batches are used up in order: keep the few latest in memory, not every one of the run. */
const POOLS_KEPT = 4

function loadPool(file: string): string[] {
  let items = pools.get(file)
  if (!items) {
    items = readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.length > 0)
    pools.set(file, items)
    for (const old of pools.keys()) if (pools.size > POOLS_KEPT) pools.delete(old)
  }
  return items
}

interface Prepared {
  spec: LoadSpec
  requests: Request[]
  used: () => number
  exhausted: () => boolean
  mismatches: () => number
  /** Stops the autocannon run in progress (set by `cannon`). */
  stop?: () => void
}

/** Template "a{item}b" → item => "a" + item + "b", split once. */
function template(s: string): (item: string) => string {
  const parts = s.split(ITEM)
  return parts.length === 1 ? () => s : (item) => parts.join(item)
}

function prepare(spec: LoadSpec): Prepared {
  const items = spec.pool ? loadPool(spec.pool.file) : []
  if (spec.pool && items.length === 0) throw new Error(`empty pool ${spec.pool.file}`)
  let cursor = spec.pool?.offset ?? 0
  let used = 0
  let exhausted = false
  let mismatches = 0
  const next = (): string => {
    if (cursor >= items.length) {
      if (spec.pool?.cycle) cursor = 0
      else {
        // Out of fresh items: end the run now; the parent seeds more and runs it again.
        if (!exhausted) prepared.stop?.()
        exhausted = true
        return items[items.length - 1]!
      }
    }
    used++
    return items[cursor++]!
  }

  const path = template(spec.path)
  const body = spec.body === undefined ? undefined : template(spec.body)
  const headers = Object.entries(spec.headers).map(([k, v]) => [k, template(v)] as const)
  const build = (item: string): Request => {
    const h: Record<string, string> = {}
    for (const [k, f] of headers) h[k] = f(item)
    const out: Request = { method: spec.method, path: path(item), headers: h }
    if (body) out.body = body(item)
    return out
  }

  let requests: Request[]
  if (!spec.pool) {
    requests = [build('')]
  } else if (spec.pool.cycle && items.length <= STATIC_MAX) {
    // A few items sent again and again: prebuilt once, so the load generator only writes buffers.
    requests = items.map(build)
  } else {
    // Fresh items, or a long cycle (growth tokens, session cookies): each request built as it
    // is sent, from one cursor shared by every connection, so consecutive requests take
    // consecutive items. That costs the load generator more a request than prebuilt requests;
    // the row's `load` share shows whether it limits the row.
    const request = build('')
    request.setupRequest = (req) => ({ ...req, ...build(next()) })
    requests = [request]
  }

  const check = spec.check
  if (check) {
    const headerName = check.header?.name.toLowerCase()
    const onResponse: Request['onResponse'] = (_status, resBody, _ctx, resHeaders) => {
      let ok = check.bodyIncludes === undefined || resBody.includes(check.bodyIncludes)
      if (ok && check.header && headerName) {
        const entry = Object.entries(resHeaders).find(([k]) => k.toLowerCase() === headerName)
        const value = entry ? String(entry[1]) : ''
        ok = value.includes(check.header.includes)
      }
      if (!ok) mismatches++
    }
    for (const r of requests) r.onResponse = onResponse
  }
  const prepared: Prepared = {
    spec,
    requests,
    used: () => used,
    exhausted: () => exhausted,
    mismatches: () => mismatches,
  }
  return prepared
}

function cannon(p: Prepared, length: { durationS: number } | { amount: number }, latencies?: { values: Float64Array; n: number }) {
  return new Promise<Record<string, unknown>>((resolve, reject) => {
    const instance = autocannon(
      {
        url: p.spec.origin,
        connections: p.spec.connections,
        ...('amount' in length ? { amount: length.amount } : { duration: length.durationS }),
        timeout: 10,
        sampleInt: SAMPLE_MS,
        requests: p.requests,
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    )
    p.stop = () => instance.stop()
    if (latencies) {
      instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => {
        if (latencies.n === latencies.values.length) {
          const bigger = new Float64Array(latencies.values.length * 2)
          bigger.set(latencies.values)
          latencies.values = bigger
        }
        latencies.values[latencies.n++] = ms
      })
    }
  })
}

function percentileOf(values: Float64Array, p: number): number {
  if (values.length === 0) return NaN
  const rank = Math.min(values.length, Math.max(1, Math.ceil((p / 100) * values.length)))
  return values[rank - 1]!
}

let current: Prepared | undefined

async function handle(msg: WorkerRequest): Promise<WorkerReply> {
  if (msg.type === 'prepare') {
    current = prepare(msg.spec)
    // Opens every connection (and the server's database pool) before the measured run.
    if (msg.spec.warmupS > 0) await cannon(current, { durationS: msg.spec.warmupS })
    else if (msg.spec.warmupRequests > 0) await cannon(current, { amount: msg.spec.warmupRequests })
    return { type: 'prepared', id: msg.id, used: current.used(), exhausted: current.exhausted() }
  }
  if (!current) throw new Error('run before prepare')
  const p = current
  const before = { mismatches: p.mismatches(), used: p.used() }
  const latencies = { values: new Float64Array(1 << 16), n: 0 }
  const result = await cannon(p, { durationS: p.spec.durationS }, latencies)
  const sorted = latencies.values.subarray(0, latencies.n).sort()
  const raw: RawRun = {
    autocannon: result as unknown as RawRun['autocannon'],
    latency: { p50: percentileOf(sorted, 50), p99: percentileOf(sorted, 99) },
    mismatches: p.mismatches() - before.mismatches,
    poolExhausted: p.exhausted(),
  }
  return { type: 'result', id: msg.id, raw, used: p.used() }
}

process.on('message', (msg: WorkerRequest) => {
  handle(msg).then(
    (reply) => process.send?.(reply),
    (err: unknown) =>
      process.send?.({ type: 'error', id: msg.id, message: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
  )
})
process.on('disconnect', () => process.exit(0))
process.send?.({ type: 'ready', id: 0 })
