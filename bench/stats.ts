/*
 * The arithmetic of the benchmark, kept pure so that a unit test can pin it down
 * (bench/stats.test.ts): parsing one load-generator run, the median of several
 * runs, ratios against the baselines of the same run, and the targets in docs/performance.md.
 */

/** CPU time of a process (or group of processes) over a run, as a share of one core. */
export interface CpuShares {
  server: number | null
  db: number | null
  load: number | null
  /** The server's CPU used by anything else (other processes on a shared machine). */
  others: number | null
}

/** What the load worker reports for one measured run (bench/load-worker.ts). */
export interface RawRun {
  /** autocannon's result object; only the fields below are read. */
  autocannon: {
    errors: number
    timeouts: number
    statusCodeStats: Record<string, { count: number }>
    /** Seconds from the first request to the tick that stopped the run. */
    duration: number
  }
  /** Latencies in milliseconds at full resolution (autocannon's own histogram rounds to 1 ms). */
  latency: { p50: number; p99: number }
  /** Responses whose body or headers failed the case's check. */
  mismatches: number
  /** True when the pool of fresh tokens/codes ran out and the run ended early. */
  poolExhausted: boolean
}

export interface RunSample {
  rate: number
  p50: number
  p99: number
  responses: number
  errors: number
  unexpected: number
  mismatches: number
  statuses: Record<string, number>
  durationS: number
  poolExhausted: boolean
  cpu: CpuShares
  /** Database transactions per response (pg_stat_database; approximate): round trips that commit. */
  transactionsPerResponse?: number | null
  /** The run's place in its phase (bench/rounds.ts), which pairs it with the runs beside it. */
  seq?: number
}

const NO_CPU: CpuShares = { server: null, db: null, load: null, others: null }

/**
 * One run: the rate is every response over the run's duration; every response whose status
 * is not in `expect` counts against the row.
 */
export function parseRun(raw: RawRun, expect: readonly number[], cpu: CpuShares = NO_CPU): RunSample {
  const ac = raw.autocannon
  const statuses: Record<string, number> = {}
  let responses = 0
  let unexpected = 0
  for (const [status, { count }] of Object.entries(ac.statusCodeStats)) {
    statuses[status] = count
    responses += count
    if (!expect.includes(Number(status))) unexpected += count
  }
  return {
    rate: ac.duration > 0 ? responses / ac.duration : 0,
    p50: raw.latency.p50,
    p99: raw.latency.p99,
    responses,
    errors: ac.errors + ac.timeouts,
    unexpected,
    mismatches: raw.mismatches,
    statuses,
    durationS: ac.duration,
    poolExhausted: raw.poolExhausted,
    cpu,
  }
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** Percentile by nearest rank over an unsorted sample; NaN when empty. */
export function percentile(values: Float64Array | readonly number[], p: number): number {
  if (values.length === 0) return NaN
  const sorted = Float64Array.from(values).sort()
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)))
  return sorted[rank - 1]!
}

/** A CPU share at or above this means the load generator, not the server, set the pace. */
export const LOAD_LIMIT_SHARE = 0.95
/** Other processes using this much of the server's CPU make the row's rate say little. */
export const DISTURBED_SHARE = 0.25

export interface RowSummary {
  /** Median over runs of responses per second. */
  rate: number
  p50: number
  p99: number
  runs: number
  rates: number[]
  /** Each run's place in its phase, beside `rates`; absent when a run has none (results written before it). */
  seqs?: number[]
  responses: number
  errors: number
  unexpected: number
  mismatches: number
  statuses: Record<string, number>
  cpu: CpuShares
  transactionsPerResponse: number | null
  /** False when any run had errors, unexpected statuses, failed checks or an exhausted pool. */
  valid: boolean
  problems: string[]
  loadLimited: boolean
  /** Other processes took ≥ 25% of the server's CPU: still a measurement, but of a busy machine. */
  disturbed: boolean
}

function medianOrNull(values: (number | null)[]): number | null {
  const present = values.filter((v): v is number => v !== null)
  return present.length === 0 ? null : median(present)
}

export function summarizeRuns(runs: readonly RunSample[]): RowSummary {
  const statuses: Record<string, number> = {}
  for (const r of runs) {
    for (const [s, n] of Object.entries(r.statuses)) statuses[s] = (statuses[s] ?? 0) + n
  }
  const sum = (f: (r: RunSample) => number) => runs.reduce((acc, r) => acc + f(r), 0)
  const errors = sum((r) => r.errors)
  const unexpected = sum((r) => r.unexpected)
  const mismatches = sum((r) => r.mismatches)
  const responses = sum((r) => r.responses)
  const problems: string[] = []
  if (runs.length === 0) problems.push('no runs')
  if (errors > 0) problems.push(`${errors} connection errors/timeouts`)
  if (unexpected > 0) problems.push(`${unexpected} unexpected statuses (${formatStatuses(statuses)})`)
  if (mismatches > 0) problems.push(`${mismatches} responses failed the body/header check`)
  if (runs.some((r) => r.poolExhausted)) problems.push('pool of fresh items ran out')
  if (runs.length > 0 && responses === 0) problems.push('no responses')
  const cpu: CpuShares = {
    server: medianOrNull(runs.map((r) => r.cpu.server)),
    db: medianOrNull(runs.map((r) => r.cpu.db)),
    load: medianOrNull(runs.map((r) => r.cpu.load)),
    others: medianOrNull(runs.map((r) => r.cpu.others)),
  }
  return {
    rate: median(runs.map((r) => r.rate)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    runs: runs.length,
    rates: runs.map((r) => r.rate),
    ...(runs.every((r) => r.seq !== undefined) ? { seqs: runs.map((r) => r.seq!) } : {}),
    responses,
    errors,
    unexpected,
    mismatches,
    statuses,
    cpu,
    transactionsPerResponse: medianOrNull(runs.map((r) => r.transactionsPerResponse ?? null)),
    valid: problems.length === 0,
    problems,
    loadLimited: cpu.load !== null && cpu.load >= LOAD_LIMIT_SHARE,
    disturbed: cpu.others !== null && cpu.others >= DISTURBED_SHARE,
  }
}

export function formatStatuses(statuses: Record<string, number>): string {
  return Object.entries(statuses)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([s, n]) => `${s}×${n}`)
    .join(', ')
}

/** rate(row) / rate(baseline), or null when either is missing or not a measurement. */
export function ratio(row: RowSummary | undefined, baseline: RowSummary | undefined): number | null {
  if (!row || !baseline || !row.valid || !baseline.valid || !(baseline.rate > 0)) return null
  return row.rate / baseline.rate
}

/**
 * rate(row) / rate(baseline) from runs made side by side: each run of the row over the
 * baseline's run nearest to it in the phase (the same group of the same round, bench/cases.ts
 * mainPhaseGroups), the median of those ratios. On these VMs the machine's speed moves by up
 * to half within a minute and back, so a ratio of two medians taken minutes apart measures the
 * machine as much as the rows (docs/performance.md "What is measured, and why as ratios"). Without places (results written before
 * them), the ratio of the medians.
 */
export function pairedRatio(row: RowSummary | undefined, baseline: RowSummary | undefined): number | null {
  const plain = ratio(row, baseline)
  const at = row?.seqs
  const baseAt = baseline?.seqs
  if (plain === null || at === undefined || baseAt === undefined) return plain
  const nearest = (seq: number) => baseAt.reduce((best, s, j) => (Math.abs(s - seq) < Math.abs(baseAt[best]! - seq) ? j : best), 0)
  const ratios = at.map((seq, i) => row!.rates[i]! / baseline!.rates[nearest(seq)]!)
  return ratios.every(Number.isFinite) ? median(ratios) : plain
}

export const rowKey = (caseId: string, connections: number, phase?: string): string =>
  phase ? `${caseId}@${connections}#${phase}` : `${caseId}@${connections}`

/** The ratio targets of docs/performance.md. */
export interface RatioTarget {
  path: string
  caseId: string
  baselineId: string
  min: number
}

export const RATIO_TARGETS: readonly RatioTarget[] = [
  { path: 'introspection, cached', caseId: 'introspect-cached', baselineId: 'baseline-a', min: 0.6 },
  { path: 'introspection, cache miss', caseId: 'introspect-miss', baselineId: 'baseline-b', min: 0.8 },
  { path: 'token info, cached', caseId: 'token-info-cached', baselineId: 'baseline-a', min: 0.8 },
  { path: 'token info, uncached', caseId: 'token-info-miss', baselineId: 'baseline-b', min: 0.8 },
  // Each write path against the ceiling of the writes it must make (docs/performance.md): the exchange
  // inserts a token, a remembered consent a code, a revocation writes and announces.
  { path: 'code exchange', caseId: 'code-exchange', baselineId: 'baseline-c', min: 0.8 },
  { path: 'revocation', caseId: 'revoke', baselineId: 'baseline-d', min: 0.8 },
  { path: 'authorize, remembered consent', caseId: 'authorize-remembered', baselineId: 'baseline-c', min: 0.8 },
  // A resource API's own route behind the in-process verifier, against the same route bare.
  { path: 'route guarded by the verifier', caseId: 'baseline-k', baselineId: 'baseline-a', min: 0.95 },
]

export const GROWTH_CASES = ['introspect-miss-growth', 'code-exchange-growth'] as const
export type GrowthCase = (typeof GROWTH_CASES)[number]
/**
 * The rows each growth row runs beside in both phases:
 * - `baseline`, as its main-phase row does: the growth target compares two phases minutes apart,
 *   with the fill between them, and the VM's speed drifts over that time (docs/performance.md
 *   "What is measured, and why as ratios"). Each phase's rate is taken over its baseline's, paired run by run, so the
 *   drift cancels as it does for every other target.
 * - `ceiling`, the row's own database work from bare Fastify (bench/cases.ts growthCeilingCases)
 *   on the same table: its growth ratio over the same baseline is what the larger table costs
 *   the work itself, the ceiling of the row's own (docs/scaling.md "The write paths' real
 *   ceilings").
 */
export const GROWTH_BESIDE: Readonly<Record<GrowthCase, { baseline: string; ceiling: string }>> = {
  'introspect-miss-growth': { baseline: 'baseline-b', ceiling: 'baseline-r' },
  'code-exchange-growth': { baseline: 'baseline-c', ceiling: 'baseline-e' },
}
export const GROWTH_MAX_SLOWDOWN = 0.1
export const VERIFIER_MIN_CHECKS = 1_000_000
export const RSS_LIMIT_BYTES = 200 * 1024 * 1024

const BASELINE_NAMES: Record<string, string> = {
  'baseline-a': 'A',
  'baseline-b': 'B',
  'baseline-c': 'C',
  'baseline-d': 'D',
  'baseline-e': 'E',
  'baseline-f': 'F',
  'baseline-g': 'G',
  'baseline-h': 'H',
  'baseline-i': 'I',
  'baseline-j': 'J',
  'baseline-k': 'K',
  'baseline-l': 'L',
  'baseline-m': 'M',
  'baseline-n': 'N',
  'baseline-o': 'O',
  'baseline-p': 'P',
  'baseline-q': 'Q',
  'baseline-r': 'R',
}

/**
 * docs/performance.md: each read path against its own work from bare Fastify (baselines I, J, N and O,
 * bench/cached-routes.ts), and that work against its target's baseline (A, or B for the misses):
 * what Gatehouse's HTTP layers cost, and what the answer itself costs beyond the baseline.
 */
const WORK_CEILINGS: readonly {
  path: string
  caseId: string
  work: string
  target: string
  answer?: string
  /** The path reads the database: PostgreSQL's CPU per response is compared too. */
  dbCostOver?: true
}[] = [
  // Q and L: I and J answered with every header Gatehouse's answer carries: what the documented answer costs.
  { path: 'introspection, cached', caseId: 'introspect-cached', work: 'baseline-i', target: 'baseline-a', answer: 'baseline-q' },
  { path: 'token info, cached', caseId: 'token-info-cached', work: 'baseline-j', target: 'baseline-a', answer: 'baseline-l' },
  { path: 'introspection, cache miss', caseId: 'introspect-miss', work: 'baseline-n', target: 'baseline-b', dbCostOver: true },
  { path: 'token info, uncached', caseId: 'token-info-miss', work: 'baseline-o', target: 'baseline-b', dbCostOver: true },
]

/**
 * docs/performance.md: each write path against its own statements sent from bare Fastify (baselines E–H,
 * bench/statement-routes.ts), and those statements against the one INSERT (C) or INSERT and
 * NOTIFY (D) of its target. The first ratio is what Gatehouse's layers cost, the second what the
 * statements cost beyond the target's ceiling: together they show where a target is out of reach.
 */
const STATEMENT_CEILINGS: readonly {
  path: string
  caseId: string
  statements: string
  target: string
  /** What these statements do beyond the path's plain ones, named after "statements". */
  beyond?: string
}[] = [
  { path: 'code exchange', caseId: 'code-exchange', statements: 'baseline-e', target: 'baseline-c' },
  { path: 'authorize, remembered consent', caseId: 'authorize-remembered', statements: 'baseline-h', target: 'baseline-c' },
  {
    path: 'authorize, remembered consent, uncached session',
    caseId: 'authorize-remembered-uncached',
    statements: 'baseline-f',
    target: 'baseline-c',
  },
  { path: 'revocation', caseId: 'revoke', statements: 'baseline-g', target: 'baseline-d' },
  // P: G's statement with its notice heard by its own process, as Gatehouse's LISTEN hears each of its own.
  { path: 'revocation', caseId: 'revoke', statements: 'baseline-p', target: 'baseline-d', beyond: ', its notice heard' },
]

export interface TargetCell {
  connections: number | null
  value: number | null
  pass: boolean | null
  note?: string
}

export interface TargetResult {
  path: string
  target: string
  cells: TargetCell[]
  /** null: not measured (missing endpoint, errors); otherwise every cell passed. */
  pass: boolean | null
}

export interface Extras {
  /** Checks per second of the in-process verifier, or null when it could not run. */
  verifierRate: number | null
  /** Peak resident set of the Gatehouse process(es), bytes. */
  peakRssBytes: number | null
  /** The two growth phases, smaller first, e.g. ['10k', '1M']. */
  growthPhases: readonly [string, string]
}

function overall(cells: TargetCell[]): boolean | null {
  if (cells.length === 0 || cells.some((c) => c.pass === null)) return null
  return cells.every((c) => c.pass)
}

function cellNote(row: RowSummary | undefined, baseline: RowSummary | undefined): string | undefined {
  if (!row) return 'not measured'
  if (!row.valid) return row.runs === 0 ? 'not measured' : 'row has errors'
  if (!baseline || !baseline.valid) return 'baseline not measured'
  return undefined
}

/**
 * A row's growth ratio: each phase's rate over the baseline beside it, paired run by run, and
 * then the larger table's over the smaller's.
 */
function growthRatio(
  rows: Readonly<Record<string, RowSummary>>,
  caseId: string,
  baselineId: string,
  connections: number,
  [small, large]: readonly [string, string],
): { value: number | null; note?: string } {
  const before = rows[rowKey(caseId, connections, small)]
  const after = rows[rowKey(caseId, connections, large)]
  const baseBefore = rows[rowKey(baselineId, connections, small)]
  const baseAfter = rows[rowKey(baselineId, connections, large)]
  const overAfter = pairedRatio(after, baseAfter)
  const overBefore = pairedRatio(before, baseBefore)
  if (overAfter === null || overBefore === null) return { value: null, note: cellNote(after, baseAfter) ?? cellNote(before, baseBefore) }
  return { value: overAfter / overBefore }
}

const growthPath = (caseId: string, [small, large]: readonly [string, string]) =>
  `growth ${small} → ${large} tokens, ${caseId.replace(/-growth$/, '')}`

export function evaluateTargets(
  rows: Readonly<Record<string, RowSummary>>,
  connections: readonly number[],
  extras: Extras,
): TargetResult[] {
  const results: TargetResult[] = []
  for (const t of RATIO_TARGETS) {
    const cells = connections.map((c): TargetCell => {
      const row = rows[rowKey(t.caseId, c)]
      const base = rows[rowKey(t.baselineId, c)]
      const value = pairedRatio(row, base)
      const note = value === null ? cellNote(row, base) : undefined
      return { connections: c, value, pass: value === null ? null : value >= t.min, ...(note ? { note } : {}) }
    })
    results.push({ path: t.path, target: `≥ ${t.min} × baseline ${BASELINE_NAMES[t.baselineId]}`, cells, pass: overall(cells) })
  }

  const v = extras.verifierRate
  const verifierCells: TargetCell[] = [
    { connections: null, value: v, pass: v === null ? null : v >= VERIFIER_MIN_CHECKS, ...(v === null ? { note: 'not measured' } : {}) },
  ]
  results.push({ path: 'in-process verifier, cached', target: '≥ 1,000,000 checks/s', cells: verifierCells, pass: overall(verifierCells) })

  for (const caseId of GROWTH_CASES) {
    const cells = connections.map((c): TargetCell => {
      const { value, note } = growthRatio(rows, caseId, GROWTH_BESIDE[caseId].baseline, c, extras.growthPhases)
      return { connections: c, value, pass: value === null ? null : value >= 1 - GROWTH_MAX_SLOWDOWN, ...(note ? { note } : {}) }
    })
    results.push({
      path: growthPath(caseId, extras.growthPhases),
      target: `≤ ${GROWTH_MAX_SLOWDOWN * 100}% slower over baseline ${BASELINE_NAMES[GROWTH_BESIDE[caseId].baseline]} (ratio ≥ ${1 - GROWTH_MAX_SLOWDOWN})`,
      cells,
      pass: overall(cells),
    })
  }

  const rss = extras.peakRssBytes
  const rssCells: TargetCell[] = [
    { connections: null, value: rss, pass: rss === null ? null : rss < RSS_LIMIT_BYTES, ...(rss === null ? { note: 'not measured' } : {}) },
  ]
  results.push({ path: 'peak RSS under load', target: '< 200 MB', cells: rssCells, pass: overall(rssCells) })
  return results
}

/**
 * Rows set against other rows of the same run, with no target in docs/performance.md:
 * what `openid` adds to the code exchange, per signing algorithm, and UserInfo beside the paths
 * it resembles.
 */
export interface Comparison {
  path: string
  caseId: string
  /** Rows whose rate this row's rate is divided by. */
  against: readonly string[]
  /** The row whose server CPU per request is subtracted from this row's: the extra cost, in µs. */
  costOver?: string
  /** Also PostgreSQL's CPU per request over `costOver`'s (the backends serving the benchmark database). */
  dbCostOver?: true
}

export const COMPARISONS: readonly Comparison[] = [
  ...(
    [
      ['RS256', 'rs256'],
      ['ES256', 'es256'],
      ['EdDSA', 'eddsa'],
    ] as const
  ).map(([alg, suffix]) => ({
    path: `code exchange + ID Token ${alg}`,
    caseId: `code-exchange-openid-${suffix}`,
    against: ['code-exchange', 'baseline-c'],
    costOver: 'code-exchange',
  })),
  { path: 'UserInfo, cached', caseId: 'userinfo-cached', against: ['baseline-a', 'token-info-cached'] },
  { path: 'UserInfo, uncached', caseId: 'userinfo-miss', against: ['baseline-b', 'token-info-miss'] },
  // RFC 6749 §4.4: one authentication and one INSERT; C, one INSERT from bare Fastify, is its ceiling.
  { path: 'client credentials grant', caseId: 'client-credentials', against: ['baseline-c'], costOver: 'baseline-c' },
  // RFC 8628 §3.5: a pending poll must record when it came (the next one may be too soon), so it
  // writes a row; C, one write from bare Fastify, is its ceiling. dbCostOver: PostgreSQL's share of
  // its read and its write beside C's one INSERT.
  { path: 'device poll, pending', caseId: 'device-poll', against: ['baseline-c'], costOver: 'baseline-c', dbCostOver: true },
  // RFC 6749 §6 with rotation: one statement that authenticates the client, retires the token,
  // inserts its successor and the access token; C, one write from bare Fastify, is its ceiling.
  // dbCostOver: PostgreSQL's share of that statement beside C's one INSERT.
  { path: 'refresh token grant', caseId: 'refresh', against: ['baseline-c'], costOver: 'baseline-c', dbCostOver: true },
  ...STATEMENT_CEILINGS.flatMap(({ path, caseId, statements, target, beyond = '' }): Comparison[] => [
    { path: `${path} over its statements${beyond}`, caseId, against: [statements], costOver: statements, dbCostOver: true },
    {
      path: `${path}'s statements${beyond} (${BASELINE_NAMES[statements]})`,
      caseId: statements,
      against: [target],
      costOver: target,
      dbCostOver: true,
    },
  ]),
  ...WORK_CEILINGS.flatMap(({ path, caseId, work, target, answer, dbCostOver }): Comparison[] => [
    { path: `${path} over its own work`, caseId, against: [work], costOver: work, ...(dbCostOver ? { dbCostOver } : {}) },
    {
      path: `${path}'s own work (${BASELINE_NAMES[work]})`,
      caseId: work,
      against: [target],
      costOver: target,
      ...(dbCostOver ? { dbCostOver } : {}),
    },
    ...(answer === undefined
      ? []
      : [
          { path: `${path} over its answer as sent`, caseId, against: [answer], costOver: answer },
          { path: `${path}'s answer as sent (${BASELINE_NAMES[answer]})`, caseId: answer, against: [target], costOver: target },
        ]),
  ]),
  // K against M, the same request (its bearer token) to the same route unguarded: what the guard alone costs.
  { path: 'route guarded by the verifier', caseId: 'baseline-k', against: ['baseline-m'], costOver: 'baseline-m' },
]

export interface ComparisonCell {
  connections: number
  value: number | null
  note?: string
}

export interface ComparisonLine {
  path: string
  /** A row id (a ratio of rates), or `server CPU over <row id>` / `pg CPU over <row id>` (µs per request). */
  against: string
  unit: 'ratio' | 'us'
  cells: ComparisonCell[]
}

/**
 * CPU per response, in µs: a share of one core over the rate. `server`: the server's processes
 * alone (the signature and the claims are made there); `db`: the PostgreSQL backends serving
 * the benchmark database.
 */
export function cpuPerRequestUs(row: RowSummary | undefined, of: 'server' | 'db'): number | null {
  const share = row?.cpu[of] ?? null
  if (!row || !row.valid || !(row.rate > 0) || share === null) return null
  return (share / row.rate) * 1e6
}

function costLine(
  cmp: Comparison,
  over: string,
  of: 'server' | 'db',
  rows: Readonly<Record<string, RowSummary>>,
  connections: readonly number[],
): ComparisonLine {
  const cells = connections.map((c): ComparisonCell => {
    const mine = cpuPerRequestUs(rows[rowKey(cmp.caseId, c)], of)
    const theirs = cpuPerRequestUs(rows[rowKey(over, c)], of)
    return mine === null || theirs === null
      ? { connections: c, value: null, note: 'not measured' }
      : { connections: c, value: mine - theirs }
  })
  return { path: cmp.path, against: `${of === 'server' ? 'server' : 'pg'} CPU over ${over}`, unit: 'us', cells }
}

/**
 * Case ids selected by `--only` (prefixes; null: every case), with the rows each selected row
 * is compared with (COMPARISONS), so that `--only code-exchange-openid` measures both sides of its ratios.
 */
export function selectCaseIds(ids: readonly string[], only: readonly string[] | null): Set<string> {
  const chosen = new Set(ids.filter((id) => !only || only.some((o) => id.startsWith(o))))
  for (const row of GROWTH_CASES) {
    if (!chosen.has(row)) continue
    for (const other of Object.values(GROWTH_BESIDE[row])) if (ids.includes(other)) chosen.add(other)
  }
  for (const cmp of COMPARISONS) {
    if (!chosen.has(cmp.caseId)) continue
    for (const other of cmp.against) if (ids.includes(other)) chosen.add(other)
  }
  return chosen
}

/**
 * The comparisons whose row was measured (or tried) in this run, at each concurrency; with the
 * growth phases, each growth row's ceiling (GROWTH_BESIDE) with its growth ratio over the same
 * baseline, and the row's growth over its ceiling's.
 */
export function evaluateComparisons(
  rows: Readonly<Record<string, RowSummary>>,
  connections: readonly number[],
  growthPhases?: readonly [string, string],
): ComparisonLine[] {
  const lines: ComparisonLine[] = []
  for (const cmp of COMPARISONS) {
    if (!connections.some((c) => rows[rowKey(cmp.caseId, c)])) continue
    for (const other of cmp.against) {
      const cells = connections.map((c): ComparisonCell => {
        const row = rows[rowKey(cmp.caseId, c)]
        const base = rows[rowKey(other, c)]
        const value = pairedRatio(row, base)
        // The line names the row compared with: its own note need only say that it has no number.
        const note = value === null ? cellNote(row, base)?.replace('baseline not measured', 'not measured') : undefined
        return { connections: c, value, ...(note ? { note } : {}) }
      })
      lines.push({ path: cmp.path, against: BASELINE_NAMES[other] ? `baseline ${BASELINE_NAMES[other]}` : other, unit: 'ratio', cells })
    }
    const over = cmp.costOver
    if (over) lines.push(costLine(cmp, over, 'server', rows, connections))
    if (over && cmp.dbCostOver) lines.push(costLine(cmp, over, 'db', rows, connections))
  }
  return growthPhases === undefined ? lines : [...lines, ...growthComparisons(rows, connections, growthPhases)]
}

/** Each growth row's ceiling, its growth ratio over the row's baseline, and the row's over it. */
function growthComparisons(
  rows: Readonly<Record<string, RowSummary>>,
  connections: readonly number[],
  phases: readonly [string, string],
): ComparisonLine[] {
  const lines: ComparisonLine[] = []
  for (const caseId of GROWTH_CASES) {
    const { baseline: base, ceiling } = GROWTH_BESIDE[caseId]
    if (!connections.some((c) => rows[rowKey(ceiling, c, phases[1])])) continue
    const ratios = connections.map((c) => ({
      connections: c,
      row: growthRatio(rows, caseId, base, c, phases),
      ceiling: growthRatio(rows, ceiling, base, c, phases),
    }))
    const cell = (c: number, value: number | null, note?: string): ComparisonCell => ({
      connections: c,
      value,
      ...(value === null ? { note: note ?? 'not measured' } : {}),
    })
    const path = growthPath(caseId, phases)
    lines.push(
      {
        path: `${path}: its own work (${BASELINE_NAMES[ceiling]})`,
        against: `baseline ${BASELINE_NAMES[base]}, ${phases[1]} over ${phases[0]}`,
        unit: 'ratio',
        cells: ratios.map((r) => cell(r.connections, r.ceiling.value, r.ceiling.note)),
      },
      {
        path: `${path} over its own work`,
        against: `${BASELINE_NAMES[ceiling]}'s growth`,
        unit: 'ratio',
        cells: ratios.map((r) =>
          r.row.value === null || r.ceiling.value === null
            ? cell(r.connections, null, r.row.note ?? r.ceiling.note)
            : cell(r.connections, r.row.value / r.ceiling.value),
        ),
      },
    )
  }
  return lines
}
