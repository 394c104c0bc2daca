import type { Db } from '../src/db/connect.js'
import type { BenchCase, PoolRef, ServerKind } from './cases.js'
import { coreShare, cpuShare, markCpu, pinPids } from './cpu.js'
import type { RunningServer } from './gatehouse.js'
import type { LoadGenerator, LoadSpec } from './load.js'
import { FixedPool, Pool } from './pools.js'
import {
  applicationName,
  backends,
  insertCodes,
  insertDeviceCodes,
  insertRefreshTokens,
  insertTokens,
  openidTarget,
  plainTarget,
  removeExchanged,
  type SeedInfo,
  transactionCount,
} from './seed.js'
import { parseRun, type RunSample } from './stats.js'

/*
 * One case at one concurrency: a probe request first (so a missing endpoint is one clear
 * failure, not a run of 404s), then for each run a warm-up, the pinning of the database
 * backends, and the measured run between two /proc CPU marks.
 */

export interface MeasureContext {
  db: Db
  dbName: string
  seed: SeedInfo
  load: LoadGenerator
  servers: Partial<Record<ServerKind, RunningServer>>
  serverCpu: number
  /**
   * Where the servers not under test wait during a run: the load generator's CPU. An idle server
   * is not idle while another row runs: the baseline server's verifier (K) and every Gatehouse
   * process hear each revocation's NOTIFY, and on the server's CPU that work took 5–7% of it from
   * the revocation row (its "other" share, 9–10% against 2–3% for the exchange). Their LISTEN
   * connections' backends wake for each notice too: they wait here as well (measuredRun).
   */
  idleCpu: number
  /** Where the PostgreSQL backends run: the server's CPU, or the load generator's when profiling. */
  dbCpu: number
  cached: FixedPool
  /** The same few tokens granted the identity scopes (UserInfo's cached row), made at its first probe. */
  cachedOpenid?: FixedPool
  growth: FixedPool
  /** Session cookies of users who have granted the bench application `read` (docs/operating/limits.md). */
  rememberedSessions: FixedPool
  /** The same sessions in rememberedAgain's order (bench/cases.ts). */
  rememberedAgain: FixedPool
  durationS: number
  warmupS: number
  /** When warmupS is 0: this many requests per connection, and at least warmupRequestsMin. */
  warmupRequestsPerConnection: number
  warmupRequestsMin: number
  /** Start of the current growth phase, for removing what its exchanges issued. */
  phaseStart: Date
  pools: Map<string, Pool>
  /** Last measured rate per case@connections, to size the next batch of fresh items. */
  rateHints: Map<string, number>
}

const ITEM = '{item}'
const fill = (s: string, item: string | undefined) => (item === undefined ? s : s.split(ITEM).join(item))

type FreshRef = Extract<PoolRef, { kind: 'fresh-tokens' | 'fresh-codes' | 'fresh-device-codes' | 'fresh-refresh-tokens' }>
const FRESH_KINDS: ReadonlySet<PoolRef['kind']> = new Set<FreshRef['kind']>([
  'fresh-tokens',
  'fresh-codes',
  'fresh-device-codes',
  'fresh-refresh-tokens',
])
const isFresh = (ref: PoolRef | undefined): ref is FreshRef => ref !== undefined && FRESH_KINDS.has(ref.kind)

/** `n` new single-use items of a fresh pool: the bench client's, or an OpenID application's (docs/openid-connect.md). */
export function insertFresh(db: Db, seed: SeedInfo, ref: FreshRef, n: number): Promise<string[]> {
  if (ref.kind === 'fresh-device-codes') return insertDeviceCodes(db, seed, n)
  if (ref.kind === 'fresh-refresh-tokens') return insertRefreshTokens(db, seed, n)
  if (ref.kind === 'fresh-codes') return insertCodes(db, seed, n, ref.openid ? openidTarget(seed, ref.openid) : plainTarget(seed))
  return insertTokens(db, seed, n, ref.openid ? openidTarget(seed, 'RS256') : plainTarget(seed))
}

function freshPool(ctx: MeasureContext, c: BenchCase): Pool | undefined {
  const ref = c.pool
  if (!isFresh(ref)) return undefined
  // One pool per kind (and OpenID application): rows take turns on it, and no item is ever sent twice.
  const name = 'openid' in ref && ref.openid ? `${ref.kind}:openid:${ref.openid}` : ref.kind
  let pool = ctx.pools.get(name)
  if (!pool) {
    pool = new Pool(name, (n) => insertFresh(ctx.db, ctx.seed, ref, n), ref.minBatch)
    ctx.pools.set(name, pool)
  }
  return pool
}

/** The few cached tokens granted the identity scopes, inserted when a row first needs them. */
export async function cachedOpenidPool(ctx: MeasureContext): Promise<FixedPool> {
  ctx.cachedOpenid ??= new FixedPool('cached-openid', await insertTokens(ctx.db, ctx.seed, 10, openidTarget(ctx.seed, 'RS256')))
  return ctx.cachedOpenid
}

function fixedPool(ctx: MeasureContext, c: BenchCase): FixedPool | undefined {
  if (c.pool?.kind === 'cached-tokens') return c.pool.openid ? ctx.cachedOpenid : ctx.cached
  if (c.pool?.kind === 'growth-tokens') return ctx.growth
  if (c.pool?.kind === 'remembered-sessions') return c.pool.again ? ctx.rememberedAgain : ctx.rememberedSessions
  return undefined
}

/** Why the server of case `c` cannot answer now (its process ended), or null. */
function serverExited(c: BenchCase, s: RunningServer): string | null {
  return s.child.exited() ? `${c.server} server: ${s.child.name} exited:\n${s.child.output()}` : null
}

function server(ctx: MeasureContext, c: BenchCase): RunningServer {
  const s = ctx.servers[c.server]
  if (!s) throw new Error(`${c.server} server is not running`)
  const exited = serverExited(c, s)
  if (exited) throw new Error(exited)
  return s
}

/** The request of case `c` for one pool item: `{item}` filled in the path, the headers and the body. */
export function caseRequest(c: BenchCase, item: string | undefined): { path: string; headers: Record<string, string>; body?: string } {
  const headers = Object.fromEntries(Object.entries(c.headers ?? {}).map(([k, v]) => [k, fill(v, item)]))
  return c.body === undefined ? { path: fill(c.path, item), headers } : { path: fill(c.path, item), headers, body: fill(c.body, item) }
}

/** Why an answer is not the one case `c` expects, or null; `header` reads a response header. */
export function answerProblem(c: BenchCase, status: number, text: string, header: (name: string) => string): string | null {
  const what = `${c.method} ${c.path.split('?')[0]}`
  if (status === 404) return `endpoint not there yet: ${what} answered 404`
  if (!c.expect.includes(status)) return `${what} answered ${status} (expected ${c.expect.join('/')}): ${text.slice(0, 300)}`
  if (c.check?.bodyIncludes && !text.includes(c.check.bodyIncludes)) {
    return `${what} answered without ${c.check.bodyIncludes}: ${text.slice(0, 300)}`
  }
  if (c.check?.header) {
    const value = header(c.check.header.name)
    if (!value.includes(c.check.header.includes)) {
      return `${what}: ${c.check.header.name} "${value}" lacks ${c.check.header.includes}`
    }
  }
  return null
}

async function probeOnce(origin: string, c: BenchCase, item: string | undefined): Promise<string | null> {
  const { path, headers, body } = caseRequest(c, item)
  const init: RequestInit = { method: c.method, headers, redirect: 'manual', signal: AbortSignal.timeout(10_000) }
  if (body !== undefined) init.body = body
  const res = await fetch(origin + path, init)
  const text = await res.text()
  return answerProblem(c, res.status, text, (name) => res.headers.get(name) ?? '')
}

/** null when the endpoint answers as the case expects; otherwise why the row cannot run. */
export async function probe(ctx: MeasureContext, c: BenchCase): Promise<string | null> {
  try {
    const srv = server(ctx, c)
    if (c.pool?.kind === 'cached-tokens' && c.pool.openid) await cachedOpenidPool(ctx)
    const fixed = fixedPool(ctx, c)
    const fresh = freshPool(ctx, c)
    // Every cached token once: a correct answer for each, and a warm cache afterwards.
    const items = fixed ? fixed.items.slice(0, 10) : fresh ? [await fresh.take()] : [undefined]
    for (const item of items) {
      const problem = await probeOnce(srv.origin, c, item)
      if (problem) return problem
    }
    return null
  } catch (err) {
    return `probe failed: ${err instanceof Error ? err.message : String(err)}`
  }
}

function itemsNeeded(ctx: MeasureContext, c: BenchCase, connections: number): number {
  const hint =
    ctx.rateHints.get(`${c.id}@${connections}`) ??
    Math.max(0, ...[...ctx.rateHints].filter(([k]) => k.startsWith(`${c.id}@`)).map(([, v]) => v))
  // Fresh items feed database-bound paths: twice baseline B is a generous first guess, and a
  // run that still runs out is run again with more (measureRun).
  const baselineB = ctx.rateHints.get(`baseline-b@${connections}`)
  const rate = hint > 0 ? hint : baselineB ? 2 * baselineB : 20_000
  // autocannon stops on its next one-second tick after the duration: one second of margin.
  return Math.ceil(rate * 1.5 * (ctx.warmupS + ctx.durationS + 1)) + warmupRequests(ctx, c, connections) + 1000
}

export function warmupRequests(ctx: MeasureContext, c: BenchCase, connections: number): number {
  if (ctx.warmupS > 0) return 0
  const usual = Math.max(ctx.warmupRequestsMin, ctx.warmupRequestsPerConnection * connections)
  const pool = c.warmupOverPool ? fixedPool(ctx, c) : undefined
  return pool ? Math.max(usual, pool.items.length) : usual
}

/** A run that ran out of fresh items is run again with a batch this many times larger, at most twice. */
const RETRY_GROWTH = 2
const MAX_ATTEMPTS = 3

export async function measureRun(ctx: MeasureContext, c: BenchCase, connections: number): Promise<RunSample> {
  const srv = server(ctx, c)
  const fresh = freshPool(ctx, c)
  const fixed = fixedPool(ctx, c)
  const spec: LoadSpec = {
    origin: srv.origin,
    method: c.method,
    path: c.path,
    headers: c.headers ?? {},
    connections,
    durationS: ctx.durationS,
    warmupS: ctx.warmupS,
    warmupRequests: warmupRequests(ctx, c, connections),
  }
  if (c.body !== undefined) spec.body = c.body
  if (c.check) spec.check = c.check
  if (fixed) spec.pool = { file: fixed.file, offset: fixed.offset, cycle: true }

  await placeServers(ctx, srv)
  let need = itemsNeeded(ctx, c, connections)
  for (let attempt = 1; ; attempt++) {
    if (fresh) spec.pool = { ...(await fresh.reserve(need)), cycle: false }
    const last = attempt === MAX_ATTEMPTS
    const warm = await ctx.load.prepare(spec)
    if (warm.exhausted && !last) {
      fresh?.consumed(warm.used)
      need *= RETRY_GROWTH
      continue
    }
    const sample = await measuredRun(ctx, srv, c, fresh, fixed)
    if (sample.poolExhausted && !last) {
      need = Math.max(need, sample.responses) * RETRY_GROWTH
      continue
    }
    ctx.rateHints.set(`${c.id}@${connections}`, Math.max(sample.rate, ctx.rateHints.get(`${c.id}@${connections}`) ?? 0))
    const exited = serverExited(c, srv)
    if (exited) throw new Error(`during the run, ${exited}`)
    return sample
  }
}

/** The server under test on the server's CPU, every other running server on `idleCpu`, before the warm-up. */
async function placeServers(ctx: MeasureContext, srv: RunningServer): Promise<void> {
  const pids = (s: RunningServer | undefined) => (s ? [s.child.pid] : [])
  const idle = Object.values(ctx.servers).filter((s) => s !== srv)
  await Promise.all([pinPids(pids(srv), ctx.serverCpu, true), pinPids(idle.flatMap(pids), ctx.idleCpu, true)])
}

/** The measured run of the prepared spec, between two CPU marks. */
async function measuredRun(
  ctx: MeasureContext,
  srv: RunningServer,
  c: BenchCase,
  fresh: Pool | undefined,
  fixed: FixedPool | undefined,
): Promise<RunSample> {
  // Pooled connections open lazily and close when idle: pin whichever serve the run now. Those
  // of a server not under test go where that server waits, and their CPU is not the row's: each
  // LISTEN connection of an idle server wakes at every revocation's NOTIFY (MeasureContext.idleCpu).
  const idleNames = new Set(
    (Object.entries(ctx.servers) as [ServerKind, RunningServer | undefined][])
      .filter(([, s]) => s !== undefined && s !== srv)
      .map(([kind]) => applicationName(kind)),
  )
  const running = await backends(ctx.db, ctx.dbName)
  const idleBackends = running.filter((b) => idleNames.has(b.applicationName)).map((b) => b.pid)
  const servingBackends = running.filter((b) => !idleNames.has(b.applicationName)).map((b) => b.pid)
  await Promise.all([pinPids(servingBackends, ctx.dbCpu), pinPids(idleBackends, ctx.idleCpu)])
  const serverPids = [srv.child.pid]
  const all = [...serverPids, ctx.load.pid, ...servingBackends]
  const txBefore = await transactionCount(ctx.db, ctx.dbName)
  const before = markCpu(all)
  const { raw, used } = await ctx.load.run()
  const after = markCpu(all)
  // Less the one transaction of the first count itself.
  const transactions = (await transactionCount(ctx.db, ctx.dbName)) - txBefore - 1
  fresh?.consumed(used)
  fixed?.advance(used)
  if (c.afterRun === 'remove-exchanged') await removeExchanged(ctx.db, ctx.phaseStart)

  const serverShare = cpuShare(before, after, serverPids)
  const dbShare = cpuShare(before, after, servingBackends)
  const core = coreShare(before, after, ctx.serverCpu)
  const sample = parseRun(raw, c.expect, {
    server: serverShare,
    db: dbShare,
    load: cpuShare(before, after, [ctx.load.pid]),
    others: core === null || serverShare === null ? null : Math.max(0, core - serverShare - (dbShare ?? 0)),
  })
  return { ...sample, transactionsPerResponse: sample.responses > 0 ? Math.max(0, transactions) / sample.responses : null }
}
