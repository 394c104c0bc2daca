import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { benchArguments } from './arguments.js'
import { BASELINE_ROWS, startBaselines } from './baselines.js'
import { callgrindTotal, NO_VALGRIND, valgrindVersion } from './callgrind.js'
import { type BenchCase, mainPhaseCases, REMEMBERED_REPEATS } from './cases.js'
import { build, type RunningServer, startGatehouse } from './gatehouse.js'
import { answerProblem, caseRequest, insertFresh } from './measure.js'
import { machineKind, RESULTS_DIR, thisMachine, writeResult } from './results.js'
import { median } from './stats.js'
import {
  createBaselineTables,
  dropDatabase,
  insertConsentedSessions,
  insertTokens,
  openidTarget,
  openMigrated,
  recreateDatabase,
  seedBase,
} from './seed.js'

/*
 * `npm run bench:instructions` (docs/performance.md "Instructions per request"). Throughput on
 * a shared two-core machine moves by several percent from one run to the next: V8 decides at run
 * time which functions to optimise and what to inline into them, and one server process can
 * settle on different code than the next. A difference of 5% between two builds then needs many
 * alternated runs to show. This counts instead the machine instructions the server process
 * executes per request, under valgrind's callgrind, which depend on the build far more than on
 * the machine: V8 runs `--single-threaded` (compilation and GC on the main thread, at the same
 * points of every run), requests go one at a time over one keep-alive connection, and only the
 * measured requests are counted (instrumentation is switched on after the warm-up).
 *
 * Each case is counted in several windows of equal size. A major garbage collection falls into
 * one window or another, and moves that window by up to a third; the median of the windows is the
 * steady cost per request, the mean includes the collections. Even single-threaded, each server
 * process settles on code of its own (V8's heuristics read the clock), and the steady cost of the
 * same code differs by up to about 6% from one process to the next: comparing two builds takes
 * several processes each (`--processes`), and the median process is reported.
 *
 * What it counts is the Node.js side: the database's work is in PostgreSQL's processes, and
 * round trips show only as the driver's work. It complements the throughput rows of
 * `npm run bench`; it does not replace them.
 */

const args = benchArguments(
  'npm run bench:instructions --',
  {
    'no-build': { type: 'boolean', default: false },
    quick: { type: 'boolean', default: false },
    warmup: { type: 'string' },
    requests: { type: 'string' },
    windows: { type: 'string' },
    processes: { type: 'string' },
    only: { type: 'string' },
    mixed: { type: 'string' },
  },
  'docs/performance.md "Instructions per request"',
)

const settings = {
  warmup: Number(args.warmup ?? (args.quick ? 1500 : 5000)),
  requests: Number(args.requests ?? (args.quick ? 300 : 1000)),
  windows: Number(args.windows ?? (args.quick ? 3 : 9)),
  processes: Number(args.processes ?? 1),
  only: args.only?.split(',') ?? null,
  /** Rounds of MIXED_TRAFFIC sent to Gatehouse before each of its rows' warm-up. */
  mixed: Number(args.mixed ?? 0),
  adminUrl: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  // Its own database per run, so that two checkouts can be counted side by side.
  dbName: `gatehouse_bench_instructions_${process.pid}`,
}

/** The rows: the bare-Fastify baselines A and B, A's route behind the verifier (K), the cached answers' own work (I, J; L: J with the headers of Gatehouse's answer; Q: I with them; N: I with a fresh token; O: J with a fresh token; G: the revocation's statement; P: G with its notice heard), and Gatehouse's hot paths (docs/performance.md). */
const CASE_IDS = [
  'baseline-a',
  'baseline-b',
  'baseline-m',
  'baseline-k',
  // The cached answers' own work (bench/cached-routes.ts): what each cached row costs beyond Fastify.
  'baseline-i',
  'baseline-j',
  'baseline-l',
  'baseline-q',
  // N: I's route sent fresh tokens, the introspection miss's own work with its database lookup.
  'baseline-n',
  // O: J's route sent fresh tokens, the token info miss's own work with its database lookup.
  'baseline-o',
  'introspect-cached',
  'introspect-miss',
  'token-info-cached',
  'token-info-miss',
  'code-exchange',
  // The OpenID Connect rows of docs/performance.md: the exchange with `openid`, its ID Token signed with RS256 (the default).
  'code-exchange-openid-rs256',
  // G: the revocation's statement from bare Fastify, so revoke over G is what Gatehouse's layers add.
  'baseline-g',
  // P: G's statement with its notice heard by its own process, as each of Gatehouse's is.
  'baseline-p',
  'revoke',
  // RFC 6749 §4.4: a machine application's token for itself (docs/decisions/021-machine-tokens.md).
  'client-credentials',
  // RFC 8628 §3.5: a device's poll while the user has not answered (docs/decisions/020-device-codes.md).
  'device-poll',
  // RFC 6749 §6 with rotation: a refresh token exchanged for a new pair (docs/expiring-tokens.md).
  'refresh',
  'authorize-remembered',
  'authorize-remembered-uncached',
  'authorize-consent',
]

/** Gatehouse's HOST (bench/gatehouse.ts). */
const HOST = '127.0.0.1'
const startedAt = Date.now()
const log = (msg: string) => process.stderr.write(`[instructions ${((Date.now() - startedAt) / 1000).toFixed(0).padStart(4)}s] ${msg}\n`)

/** A server under callgrind, counting nothing until `measure` switches instrumentation on. */
class CountedServer {
  private dumps = 0
  constructor(
    readonly server: RunningServer,
    private readonly outDir: string,
    private readonly name: string,
    /** The HOST the server was started with: valgrind writes it into the names of its control pipes. */
    private readonly host: string | undefined,
  ) {}

  private control(...command: string[]): void {
    const env = { ...process.env }
    if (this.host === undefined) delete env.HOST
    else env.HOST = this.host
    const out = execFileSync('callgrind_control', [...command, String(this.server.child.pid)], { env, encoding: 'utf8', stdio: 'pipe' })
    if (!/\bOK\b/.test(out)) throw new Error(`callgrind_control ${command.join(' ')} failed: ${out.trim()}`)
  }

  /** Instructions executed while `work` runs, and how many of them were V8's housekeeping. */
  async measure(label: string, work: () => Promise<void>): Promise<Counted> {
    this.control('--zero')
    this.control('--instr=on')
    await work()
    this.control('--instr=off')
    this.control(`--dump=${label}`)
    const file = join(this.outDir, `${this.name}.${this.server.child.pid}.${++this.dumps}`)
    return { total: callgrindTotal(file), housekeeping: housekeeping(file) }
  }
}

interface Counted {
  total: number
  housekeeping: number
}

/**
 * V8's own work in a dump: garbage-collection pauses, optimising compilation and deoptimisation,
 * by the inclusive cost of their runtime entry points (`callgrind_annotate --inclusive=yes`;
 * recursive instances, named `'2`, are inside the first and not matched). A window with a major
 * collection or a recompilation costs up to twice another, so the windows without it tell two
 * builds apart by a few percent where the totals cannot. Incremental marking steps stay in the
 * request's count (they grow with what it allocates); a collection started inside a compilation
 * is counted twice, which is rare and alike for both builds.
 */
const HOUSEKEEPING = /^v8::internal::(Heap::CollectGarbage|Runtime_Compile\w*|Runtime_NotifyDeoptimized)\(/

function housekeeping(file: string): number {
  const listing = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', file], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  })
  let sum = 0
  for (const line of listing.split('\n')) {
    const entry = /^\s*([\d,]+) \([^)]*\)\s+\?\?\?:(.+?) \[/.exec(line)
    if (entry && HOUSEKEEPING.test(entry[2]!)) sum += Number(entry[1]!.replaceAll(',', ''))
  }
  return sum
}

/**
 * One address of every group Gatehouse serves, each answered without any state the rows need
 * (a refusal, a public page, a 404). `--mixed N` sends N rounds of them before each Gatehouse row's
 * warm-up, as a deployment's process serves them between its busy requests: V8's inline caches in
 * the code every request runs then hold the shapes of all of them, not of the row's alone
 * (docs/scaling.md "Plugin contexts").
 */
const MIXED_TRAFFIC: readonly (readonly ['GET' | 'POST', string])[] = [
  ['GET', '/healthz'],
  ['GET', '/readyz'],
  ['GET', '/.well-known/openid-configuration'],
  ['GET', '/.well-known/jwks.json'],
  ['GET', '/static/app.css'],
  ['POST', '/oauth/token'],
  ['POST', '/oauth/revoke'],
  ['POST', '/oauth/par'],
  ['POST', '/oauth/introspect'],
  ['GET', '/oauth/userinfo'],
  ['GET', '/oauth/authorize'],
  ['GET', '/login'],
  ['GET', '/signup'],
  ['GET', '/applications'],
  ['GET', '/account'],
  ['GET', '/account/passkeys'],
  ['GET', '/admin'],
  ['GET', '/no-such-address'],
]

async function sendMixed(agent: http.Agent, origin: string, rounds: number): Promise<void> {
  for (let r = 0; r < rounds; r++) {
    for (const [method, path] of MIXED_TRAFFIC) {
      const form = method === 'POST'
      const { status } = await request(
        agent,
        `${origin}${path}`,
        method,
        form ? { 'content-type': 'application/x-www-form-urlencoded' } : undefined,
        form ? 'grant_type=none' : undefined,
      )
      if (status >= 500) throw new Error(`--mixed: ${method} ${path} answered ${status}`)
    }
  }
}

interface Answer {
  status: number
  text: string
  headers: http.IncomingHttpHeaders
}

/** One request over `agent`, its answer read to the end. */
function request(
  agent: http.Agent,
  url: string,
  method: string,
  headers: http.OutgoingHttpHeaders | undefined,
  body: string | undefined,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent }, (r) => {
      let text = ''
      r.setEncoding('utf8')
      r.on('data', (chunk: string) => (text += chunk))
      r.on('end', () => resolve({ status: r.statusCode ?? 0, text, headers: r.headers }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** One request at a time over one keep-alive connection; each answer is checked as the probe checks it. */
async function send(agent: http.Agent, origin: string, c: BenchCase, item: string | undefined): Promise<void> {
  const { path, headers, body } = caseRequest(c, item)
  const res = await request(agent, `${origin}${path}`, c.method, headers, body)
  const problem = answerProblem(c, res.status, res.text, (name) => String(res.headers[name.toLowerCase()] ?? ''))
  if (problem) throw new Error(`${c.id}: ${problem}`)
}

interface Row {
  id: string
  title: string
  /** Instructions per request: per server process, one per window. */
  windows: number[][]
  /** The same without V8's housekeeping (`housekeeping`). */
  outsideHousekeeping: number[][]
}

async function main(): Promise<number> {
  const valgrind = valgrindVersion()
  if (!valgrind) {
    log(NO_VALGRIND)
    return 2
  }
  if (!args['no-build']) {
    log('npm run build')
    const failure = await build()
    if (failure) throw new Error(`npm run build failed:\n${failure}`)
  }
  log(`recreating database ${settings.dbName}`)
  const url = await recreateDatabase(settings.adminUrl, settings.dbName)
  const handle = await openMigrated(url)
  const outDir = mkdtempSync(join(tmpdir(), 'gatehouse-callgrind-'))
  const servers: RunningServer[] = []
  try {
    const seed = await seedBase(handle.db)
    const cases = mainPhaseCases(seed, 0)
      .filter((c) => CASE_IDS.includes(c.id))
      // A row's own id names that row only (`code-exchange`, not the openid rows after it); any other
      // word names the rows it begins (`introspect`).
      .filter((c) => !settings.only || settings.only.some((o) => c.id === o || (!CASE_IDS.includes(o) && c.id.startsWith(o))))
    await createBaselineTables(handle.db, BASELINE_ROWS)
    const perCase = settings.warmup + settings.requests * settings.windows
    const cached = await insertTokens(handle.db, seed, 10)
    /** Items for a case in one process: the same ten tokens, or as many fresh ones as it will send. */
    const items = async (c: BenchCase): Promise<(i: number) => string | undefined> => {
      switch (c.pool?.kind) {
        case 'cached-tokens': {
          const few = c.pool.openid ? await insertTokens(handle.db, seed, 10, openidTarget(seed, 'RS256')) : cached
          return (i) => few[i % few.length]
        }
        case 'fresh-tokens':
        case 'fresh-codes':
        case 'fresh-device-codes':
        case 'fresh-refresh-tokens': {
          const fresh = await insertFresh(handle.db, seed, c.pool, perCase)
          return (i) => fresh[i]
        }
        case 'remembered-sessions': {
          // `again`: each session REMEMBERED_REPEATS times in a row (one request at a time here),
          // so 7 of 8 requests find it in the session cache, as in the load run's order.
          const repeats = c.pool.again ? REMEMBERED_REPEATS : 1
          const sessions = await insertConsentedSessions(handle.db, seed, Math.ceil(perCase / repeats))
          return (i) => sessions[Math.floor(i / repeats)]
        }
        default:
          return () => undefined
      }
    }

    const under = ['valgrind', '--tool=callgrind', '--instr-atstart=no']
    const counted = async (name: string, host: string | undefined, start: (under: string[]) => Promise<RunningServer>) => {
      const s = await start([...under, `--callgrind-out-file=${join(outDir, name)}.%p`])
      servers.push(s)
      return new CountedServer(s, outDir, name, host)
    }
    const common = { cpu: 0, nodeOptions: ['--single-threaded'], readyTimeoutMs: 300_000 }
    const rows = new Map(cases.map((c): [string, Row] => [c.id, { id: c.id, title: c.title, windows: [], outsideHousekeeping: [] }]))
    try {
      for (let p = 1; p <= settings.processes; p++) {
        log(`process ${p}/${settings.processes}: starting the servers under ${valgrind}`)
        const baseline = await counted('baseline', process.env.HOST, (u) =>
          startBaselines({ ...common, under: u, databaseUrl: url, poolMax: 10 }),
        )
        const gatehouse = await counted('gatehouse', HOST, (u) =>
          startGatehouse({
            ...common,
            under: u,
            databaseUrl: url,
            env: { HOST, DATABASE_CONNECT_TIMEOUT_MS: '60000', DATABASE_STATEMENT_TIMEOUT_MS: '0' },
          }),
        )
        for (const c of cases) {
          const target = c.server === 'baseline' ? baseline : gatehouse
          const item = await items(c)
          const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
          let next = 0
          const run = async (n: number) => {
            for (let i = 0; i < n; i++) await send(agent, target.server.origin, c, item(next++))
          }
          if (settings.mixed > 0 && target === gatehouse) await sendMixed(agent, target.server.origin, settings.mixed)
          await run(settings.warmup)
          const windows: number[] = []
          const outside: number[] = []
          for (let w = 0; w < settings.windows; w++) {
            const counted = await target.measure(c.id, () => run(settings.requests))
            windows.push(counted.total / settings.requests)
            outside.push((counted.total - counted.housekeeping) / settings.requests)
          }
          agent.destroy()
          rows.get(c.id)!.windows.push(windows)
          rows.get(c.id)!.outsideHousekeeping.push(outside)
          log(`${c.id}: ${windows.map(thousands).join(', ')} instructions per request`)
          log(`${c.id} outside GC and compilation: ${outside.map(thousands).join(', ')}`)
        }
        for (const s of servers.splice(0)) await s.child.stop()
      }
    } catch (err) {
      // What was counted before a failure is kept: a full run takes an hour or more.
      writeResults(valgrind, [...rows.values()], true)
      throw err
    }
    process.stdout.write(formatTable([...rows.values()]))
    writeResults(valgrind, [...rows.values()], false)
    return 0
  } finally {
    for (const s of servers) await s.child.stop()
    await handle.close()
    await dropDatabase(settings.adminUrl, settings.dbName)
    rmSync(outDir, { recursive: true, force: true })
  }
}

/**
 * `instructions-<date>.json`; an incomplete run's has the rows counted before it failed. A count
 * of every row, not `--quick`, replaces the earlier one of its machine kind in bench/results/,
 * any other goes to bench/results/scratch/ (bench/results.ts).
 */
function writeResults(valgrind: string, rows: Row[], incomplete: boolean): void {
  const machine = { ...thisMachine(), kind: machineKind(thisMachine()) }
  const { file, replaced } = writeResult(RESULTS_DIR, {
    family: 'instructions',
    name: `instructions-${new Date().toISOString().replace(/[:.]/g, '-')}`,
    kind: machine.kind,
    complete: !incomplete && !args.quick && !settings.only,
    data: { valgrind, node: process.version, machine, settings, incomplete, rows },
  })
  for (const old of replaced) log(`replaced ${old} (an earlier count on ${machine.kind}; git history keeps it)`)
  log(`written ${file}${incomplete ? ' (incomplete)' : ''}`)
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
const thousands = (n: number) => `${(n / 1000).toFixed(1)}k`

/** A process's steady cost per request: the median of its windows. */
const steady = (windows: number[]) => median(windows)

function formatTable(rows: Row[]): string {
  const a = rows.find((r) => r.id === 'baseline-a')
  const costOf = (r: Row) => median(r.windows.map(steady))
  const lines = [
    '| case | median per request | × baseline A | mean (with major GCs) | median of each process | outside GC and compilation: median, each process |',
    '|---|---:|---:|---:|---:|---:|',
  ]
  for (const r of rows) {
    const ratio = a ? (costOf(r) / costOf(a)).toFixed(2) : '–'
    const perProcess = r.windows.map((w) => thousands(steady(w))).join(', ')
    const outside = r.outsideHousekeeping.map(steady)
    const outsideText = `${thousands(median(outside))}: ${outside.map(thousands).join(', ')}`
    lines.push(`| ${r.id} | ${thousands(costOf(r))} | ${ratio} | ${thousands(mean(r.windows.flat()))} | ${perProcess} | ${outsideText} |`)
  }
  return lines.join('\n') + '\n'
}

process.exitCode = await main().catch((err: unknown) => {
  log(err instanceof Error ? (err.stack ?? err.message) : String(err))
  return 1
})
