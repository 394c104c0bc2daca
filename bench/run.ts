import os from 'node:os'
import { benchArguments } from './arguments.js'
import { sql } from 'kysely'
import type { DatabaseHandle } from '../src/db/connect.js'
import { BASELINE_ROWS, startBaselines } from './baselines.js'
import { type BenchCase, growthGroups, mainPhaseGroups, REMEMBERED_USERS, rememberedAgain, selectGroups, type ServerKind } from './cases.js'
import { peakRssBytes } from './cpu.js'
import { type MemoryBreakdown, readMemory } from './memory.js'
import { build, builtServerExists, type RunningServer, sourceCommit, startGatehouse } from './gatehouse.js'
import { LoadGenerator } from './load.js'
import type { MeasureContext } from './measure.js'
import { FixedPool, removePoolFiles } from './pools.js'
import { type BenchReport, formatReport, writeReport } from './report.js'
import { machineKind, RESULTS_DIR, thisMachine } from './results.js'
import { summaryLines, writeResultsPage } from './results-page.js'
import { RowBook } from './rounds.js'
import {
  countTokens,
  createBaselineTables,
  databaseNow,
  dropDatabase,
  fillTokens,
  insertConsentedSessions,
  insertTokens,
  openMigrated,
  recreateDatabase,
  type SeedInfo,
  seedBase,
  serverDatabaseUrl,
  vacuumAll,
} from './seed.js'
import { evaluateComparisons, evaluateTargets, selectCaseIds } from './stats.js'
import { measureVerifier } from './verifier.js'

/*
 * `npm run bench [-- --quick]` (docs/performance.md). Baselines and Gatehouse on one CPU (with the
 * PostgreSQL backends serving them), the load generator on the other; rounds interleave the
 * cases so that drift hits every row alike; the median of the runs is reported.
 */

const args = benchArguments(
  'npm run bench --',
  {
    quick: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    'keep-db': { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
    runs: { type: 'string' },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    connections: { type: 'string' },
    'growth-max': { type: 'string' },
    only: { type: 'string' },
  },
  'docs/performance.md "Running it"',
)

const quick = args.quick
const settings = {
  runs: Number(args.runs ?? (quick ? 1 : 3)),
  durationS: Number(args.duration ?? (quick ? 1 : 3)),
  warmupS: Number(args.warmup ?? 0),
  warmupRequestsPerConnection: quick ? 4 : 20,
  warmupRequestsMin: quick ? 200 : 2000,
  connections: (args.connections ?? '16,64').split(',').map(Number),
  growthSmall: 10_000,
  growthLarge: Number(args['growth-max'] ?? (quick ? 100_000 : 1_000_000)),
  verifierS: quick ? 1 : 3,
  dbPoolMax: 10,
  serverCpu: 0,
  loadCpu: os.availableParallelism() > 1 ? 1 : 0,
  // A sampling profile charges the server with the time PostgreSQL runs on its CPU: with the
  // backends beside the server, a query's writev shows as half of its time (the backend it
  // wakes runs first). Profiling moves them to the load generator's CPU.
  dbCpu: args['cpu-prof'] ? (os.availableParallelism() > 1 ? 1 : 0) : 0,
  adminUrl: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  dbName: 'gatehouse_bench',
  only: args.only?.split(',') ?? null,
}

const startedAt = new Date()
const log = (msg: string) => process.stderr.write(`[bench ${((Date.now() - startedAt.getTime()) / 1000).toFixed(0).padStart(3)}s] ${msg}\n`)
const count = (n: number) =>
  n >= 1_000_000 ? `${+(n / 1_000_000).toPrecision(3)}M` : n >= 1000 ? `${+(n / 1000).toPrecision(3)}k` : String(n)
/** The groups, cut to the rows `--only` selects (and the rows they are compared with). */
const selectedGroups = (groups: BenchCase[][]) =>
  selectGroups(
    groups,
    selectCaseIds(
      groups.flat().map((c) => c.id),
      settings.only,
    ),
  )

const notes: string[] = []
const peakRss: Record<string, number | null> = {}
/** What each Gatehouse process held when its load ended (bench/memory.ts), in the order they stopped. */
const memoryAtEnd: { server: string; memory: MemoryBreakdown | null }[] = []
const running: RunningServer[] = []
const book = new RowBook({ runs: settings.runs, connections: settings.connections, loadCpu: settings.loadCpu, log })

/** Stops the server of `kind` (if it started), records its memory and peak RSS under that name, and forgets it. */
async function stopServer(ctx: MeasureContext, name: ServerKind): Promise<void> {
  const s = ctx.servers[name]
  delete ctx.servers[name]
  if (!s) return
  if (name !== 'baseline') memoryAtEnd.push({ server: name, memory: await readMemory(s.origin) })
  peakRss[name] = Math.max(peakRss[name] ?? 0, peakRssBytes(s.child.pid) ?? 0) || null
  await s.child.stop()
}

/** The baseline server (A–R) on the benchmark database at `url`: the main phase's, and the growth phases' for B, C, E and R. */
const startBaselineServer = async (ctx: MeasureContext, url: string) => {
  ctx.servers.baseline = await startServer('baseline server', () =>
    startBaselines({ cpu: settings.serverCpu, databaseUrl: serverDatabaseUrl(url, 'baseline'), poolMax: settings.dbPoolMax }),
  )
}

async function startServer(name: string, start: () => Promise<RunningServer>): Promise<RunningServer | undefined> {
  try {
    const s = await start()
    running.push(s)
    return s
  } catch (err) {
    const msg = `${name} did not start: ${err instanceof Error ? err.message : String(err)}`
    notes.push(msg)
    log(msg)
    return undefined
  }
}

async function machineInfo(handle: DatabaseHandle) {
  const pgVersion = await sql<{ v: string }>`select version() as v`.execute(handle.db)
  // The settings the growth rows depend on (docs/scaling.md "The token table"): a run on a tuned
  // PostgreSQL is not comparable with one on Debian's defaults.
  const pgSettings = await sql<{ name: string; setting: string }>`
    select name, current_setting(name) as setting from pg_settings
    where name in ('shared_buffers', 'effective_cache_size', 'work_mem', 'max_connections') order by name`.execute(handle.db)
  return {
    ...thisMachine(),
    // Which committed result file this run replaces (bench/results.ts).
    kind: machineKind(thisMachine()),
    memoryGB: Math.round(os.totalmem() / 1024 ** 3),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    postgres: pgVersion.rows[0]?.v,
    postgresSettings: Object.fromEntries(pgSettings.rows.map((r) => [r.name, r.setting])),
    loadAverageAtStart: os.loadavg(),
    otherProcesses: 'the benchmark does not stop other work on the machine: see the "other" CPU share per row',
    pinning: { server: settings.serverCpu, postgresBackends: settings.dbCpu, loadGenerator: settings.loadCpu },
  }
}

interface BenchDatabase {
  url: string
  handle: DatabaseHandle
  seed: SeedInfo
}

/** A fresh `gatehouse_bench`, migrated and seeded with users, the application, grant and sessions. */
async function openBenchDatabase(): Promise<BenchDatabase> {
  log(`recreating database ${settings.dbName}`)
  const url = await recreateDatabase(settings.adminUrl, settings.dbName)
  const handle = await openMigrated(url)
  return { url, handle, seed: await seedBase(handle.db) }
}

async function reopenBenchDatabase(previous: BenchDatabase): Promise<BenchDatabase> {
  await previous.handle.close()
  return openBenchDatabase()
}

/** Builds Gatehouse unless `--no-build`; whether there is a built server to measure. */
async function buildGatehouse(): Promise<boolean> {
  if (settings.loadCpu === settings.serverCpu) notes.push('one CPU only: server and load generator share it')
  if (!args['no-build']) {
    log('npm run build')
    const err = await build()
    if (err) {
      const msg = `npm run build failed${builtServerExists() ? '; using the previous dist/' : ''}:\n${err.slice(0, 2000)}`
      notes.push(msg)
      log(msg)
    }
  }
  if (builtServerExists()) return true
  notes.push('dist/src/server.js does not exist: no Gatehouse rows')
  return false
}

function setupNotes(): void {
  notes.push(
    `PostgreSQL runs as a system service (not started by the benchmark); before each run the backends serving ` +
      `${settings.dbName} are pinned to CPU ${settings.dbCpu}` +
      (settings.dbCpu === settings.serverCpu ? ', with the server under test.' : ', with the load generator (--cpu-prof).'),
    'Growth rows run on a fresh database, back to back, against a Gatehouse process started with ' +
      'TOKEN_CACHE_MAX_ENTRIES=1, so every introspection is a database lookup however often the pool of known ' +
      'tokens repeats; other settings are the defaults. Each runs beside its baseline (B, C) in both phases, and ' +
      'the growth ratio is its paired ratio to that baseline at the large table over the same at the small one. ' +
      "Beside them run each row's own database work from bare Fastify (R: the introspection's lookup with no token " +
      "cache; E: the exchange's statement), whose growth ratio over the same baseline is the row's ceiling.",
  )
}

/** The main phase's database seeded for every row, and the context the rows are measured in. */
async function mainPhaseContext(bench: BenchDatabase): Promise<MeasureContext> {
  await createBaselineTables(bench.handle.db, BASELINE_ROWS)
  const cached = new FixedPool('cached', await insertTokens(bench.handle.db, bench.seed, 10))
  log(`seeding ${count(REMEMBERED_USERS)} users with a grant and a session (authorize-remembered)`)
  const sessions = await insertConsentedSessions(bench.handle.db, bench.seed, REMEMBERED_USERS)
  await vacuumAll(bench.handle.db)
  return {
    db: bench.handle.db,
    dbName: settings.dbName,
    seed: bench.seed,
    load: await LoadGenerator.start(settings.loadCpu),
    servers: {},
    serverCpu: settings.serverCpu,
    idleCpu: settings.loadCpu,
    dbCpu: settings.dbCpu,
    cached,
    growth: cached,
    rememberedSessions: new FixedPool('remembered-sessions', sessions),
    rememberedAgain: new FixedPool('remembered-again', rememberedAgain(sessions)),
    durationS: settings.durationS,
    warmupS: settings.warmupS,
    warmupRequestsPerConnection: settings.warmupRequestsPerConnection,
    warmupRequestsMin: settings.warmupRequestsMin,
    phaseStart: new Date(),
    pools: new Map(),
    rateHints: new Map(),
  }
}

/** A Gatehouse process as the server of `kind` (ctx.servers), named `name` in the notes. */
async function startGatehouseServer(
  ctx: MeasureContext,
  kind: ServerKind,
  name: string,
  dbUrl: string,
  env: Record<string, string> = {},
  cpuProfDir?: string,
): Promise<void> {
  ctx.servers[kind] = await startServer(name, () =>
    startGatehouse({
      cpu: settings.serverCpu,
      databaseUrl: serverDatabaseUrl(dbUrl, kind),
      name,
      env: { DATABASE_POOL_MAX: String(settings.dbPoolMax), ...env },
      ...(cpuProfDir ? { cpuProfDir } : {}),
    }),
  )
}

const freshBatch = quick ? 20_000 : 50_000
const phaseNames = { small: count(settings.growthSmall), large: count(settings.growthLarge) }

/** Baselines and every Gatehouse row of the main phase, side by side in groups. */
async function runMainPhase(ctx: MeasureContext, bench: BenchDatabase, gatehouseReady: boolean): Promise<void> {
  log('main phase')
  await startBaselineServer(ctx, bench.url)
  if (gatehouseReady) {
    const profDir = args['cpu-prof'] ? `${RESULTS_DIR}scratch/` : undefined
    if (profDir) notes.push(`V8 CPU profile of the main Gatehouse process: ${profDir}CPU.*.cpuprofile (written when it stops)`)
    await startGatehouseServer(ctx, 'gatehouse', 'gatehouse', bench.url, {}, profDir)
  }
  await book.runPhase(ctx, selectedGroups(mainPhaseGroups(bench.seed, freshBatch)))
  await stopServer(ctx, 'gatehouse')
  await stopServer(ctx, 'baseline')
}

/** The in-process verifier's checks per second, unless `--only` leaves it out. */
async function runVerifier(bench: BenchDatabase, tokens: FixedPool): Promise<Record<string, unknown>> {
  if (settings.only && !settings.only.some((o) => 'verifier'.startsWith(o))) return { ok: false, error: 'not run' }
  log('in-process verifier')
  const verifier = await measureVerifier({
    cpu: settings.loadCpu,
    databaseUrl: bench.url,
    tokens: tokens.items,
    durationS: settings.verifierS,
  })
  if (!verifier.ok) log(`verifier: ${String(verifier.error)}`)
  return { ...verifier }
}

/** Growth phases on a fresh database: 10,000 tokens, then filled to `--growth-max`. */
async function runGrowthPhases(ctx: MeasureContext, bench: BenchDatabase): Promise<void> {
  const growth = selectedGroups(growthGroups(bench.seed, freshBatch))
  if (!growth.flat().some((c) => c.server === 'growth')) return
  Object.assign(ctx, { db: bench.handle.db, seed: bench.seed, pools: new Map() })
  ctx.growth = new FixedPool('growth', await insertTokens(bench.handle.db, bench.seed, settings.growthSmall))
  // B and C, and the rows' own work R and E, run beside the growth rows in both phases
  // (GROWTH_BESIDE, bench/stats.ts).
  await createBaselineTables(bench.handle.db, BASELINE_ROWS)
  await vacuumAll(bench.handle.db)
  await startBaselineServer(ctx, bench.url)
  for (const phase of ['small', 'large'] as const) {
    if (phase === 'large') {
      log(`filling access_tokens to ${phaseNames.large}`)
      const fillStart = Date.now()
      const total = await fillTokens(bench.handle.db, bench.seed, settings.growthLarge)
      log(`filled in ${((Date.now() - fillStart) / 1000).toFixed(1)} s`)
      phaseNames.large = count(total)
    }
    log(`growth phase: ${await countTokens(bench.handle.db)} tokens`)
    await startGatehouseServer(ctx, 'growth', 'gatehouse (growth)', bench.url, { TOKEN_CACHE_MAX_ENTRIES: '1' })
    ctx.phaseStart = await databaseNow(bench.handle.db)
    await book.runPhase(ctx, growth, phaseNames[phase])
    await stopServer(ctx, 'growth')
  }
  await stopServer(ctx, 'baseline')
}

/** Every phase in turn: the machine and the verifier's result. Stops every server and drops the database, however it ends. */
async function measureAll(gatehouseReady: boolean): Promise<{ machine: Record<string, unknown>; verifier: Record<string, unknown> }> {
  let bench = await openBenchDatabase()
  const machine = await machineInfo(bench.handle)
  const ctx = await mainPhaseContext(bench)
  let verifier: Record<string, unknown> = { ok: false, error: 'not run' }
  try {
    await runMainPhase(ctx, bench, gatehouseReady)
    if (gatehouseReady) verifier = await runVerifier(bench, ctx.cached)
    bench = await reopenBenchDatabase(bench)
    if (gatehouseReady) await runGrowthPhases(ctx, bench)
  } finally {
    for (const s of running) await s.child.stop()
    await ctx.load.stop()
    await bench.handle.close()
    if (!args['keep-db']) await dropDatabase(settings.adminUrl, settings.dbName)
    removePoolFiles()
  }
  return { machine, verifier }
}

/** The run as its results file holds it: every row, the targets, the comparisons, memory and notes. */
function buildReport(machine: Record<string, unknown>, verifier: Record<string, unknown>): BenchReport {
  const phases = [phaseNames.small, phaseNames.large] as const
  const { rows, summaries } = book.summarize(phases)
  const verifierRate = verifier.ok ? Number(verifier.checksPerSecond) : null
  const finishedAt = new Date()
  const source = sourceCommit()
  return {
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    elapsedS: Math.round((finishedAt.getTime() - startedAt.getTime()) / 1000),
    mode: quick ? 'quick' : 'full',
    settings,
    machine: { ...machine, loadAverageAtEnd: os.loadavg() },
    commit: source?.commit ?? null,
    uncommittedChanges: source?.uncommittedChanges ?? false,
    rows,
    targets: evaluateTargets(summaries, settings.connections, {
      verifierRate,
      peakRssBytes: peakRss.gatehouse ?? null,
      growthPhases: phases,
    }),
    comparisons: evaluateComparisons(summaries, settings.connections, phases),
    verifier,
    peakRss,
    memoryAtEnd,
    notes,
  }
}

async function main(): Promise<number> {
  const gatehouseReady = await buildGatehouse()
  setupNotes()
  const { machine, verifier } = await measureAll(gatehouseReady)
  const report = buildReport(machine, verifier)
  // Only a full run of every row stands for its machine kind in bench/results/ and gets its page
  // there (LATEST.md); a profiled run's throughput is not quoted (docs/performance.md "Result files").
  const complete = !quick && !settings.only && !args['cpu-prof']
  const { file, replaced } = writeReport(report, complete)
  for (const old of replaced) log(`replaced ${old} (an earlier run on ${String(report.machine.kind)}; git history keeps it)`)
  const page = writeResultsPage(report, file)
  process.stdout.write(formatReport(report, file, settings.connections))
  // The summary the performance guide quotes at its top (docs/performance.md "Result files").
  process.stdout.write(`results page: ${page}\n\n${summaryLines(report, { file }).join('\n')}\n`)
  return 0
}

process.on('SIGINT', () => {
  for (const s of running) s.child.process.kill('SIGTERM')
  process.exit(130)
})

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err)
    for (const s of running) s.child.process.kill('SIGTERM')
    process.exit(1)
  },
)
