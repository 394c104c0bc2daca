import type { MemoryBreakdown } from './memory.js'
import { RESULTS_DIR, type WrittenResult, writeResult } from './results.js'
import type { ComparisonLine, RowSummary, RunSample, TargetResult } from './stats.js'
import { formatStatuses } from './stats.js'

/*
 * Output: a table on stdout, `<date>.json` with every run (bench/results.ts says where) and the
 * results page beside it (bench/results-page.ts).
 */

export interface ReportRow {
  key: string
  caseId: string
  title: string
  connections: number
  phase?: string
  summary: RowSummary
  runs: RunSample[]
}

export interface BenchReport {
  startedAt: string
  finishedAt: string
  elapsedS: number
  mode: 'quick' | 'full'
  settings: Record<string, unknown>
  machine: Record<string, unknown>
  /** The commit measured (`git rev-parse --short HEAD`); absent in results written before it was recorded. */
  commit?: string | null
  /** The work tree differed from the commit when the run started. */
  uncommittedChanges?: boolean
  rows: ReportRow[]
  targets: TargetResult[]
  /** Rows against rows of the same run, no target (bench/stats.ts COMPARISONS). */
  comparisons: ComparisonLine[]
  verifier: Record<string, unknown>
  peakRss: Record<string, number | null>
  memoryAtEnd?: { server: string; memory: MemoryBreakdown | null }[]
  notes: string[]
}

const pct = (share: number | null) => (share === null ? '–' : `${Math.round(share * 100)}%`)
const num = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '–'
/** Where each server's memory was when its load ended, from its own /metrics. */
export function memoryLines(memory: readonly { server: string; memory: MemoryBreakdown | null }[]): string[] {
  return memory.map(({ server: name, memory: m }) =>
    m === null
      ? `memory of ${name} at the end of its load: not read`
      : `memory of ${name} at the end of its load: RSS ${mb(m.rss)}; V8 heap ${mb(m.heapTotal)} (used ${mb(m.heapUsed)}; ` +
        Object.entries(m.heapSpaces)
          .map(([space, bytes]) => `${space} ${mb(bytes)}`)
          .join(', ') +
        `); external ${mb(m.external)}`,
  )
}

export const mb = (bytes: number | null) => (bytes === null ? '–' : `${(bytes / 1024 / 1024).toFixed(0)} MB`)

function table(header: string[], rows: string[][], rightAligned: Set<number>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (rightAligned.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}

function rowStatus(s: RowSummary): string {
  if (!s.valid) return `NOT A MEASUREMENT: ${s.problems.join('; ')}`
  const notes = [...(s.loadLimited ? ['limited by the load generator'] : []), ...(s.disturbed ? ['disturbed by other processes'] : [])]
  return ['ok', ...notes].join(', ')
}

export function formatRows(rows: readonly ReportRow[]): string {
  const body = rows.map((r) => {
    const s = r.summary
    const measured = s.runs > 0 && s.responses > 0
    return [
      r.caseId + (r.phase ? ` (${r.phase})` : ''),
      String(r.connections),
      measured ? num(s.rate) : '–',
      measured ? num(s.p50, 2) : '–',
      measured ? num(s.p99, 2) : '–',
      String(s.runs),
      pct(s.cpu.server),
      pct(s.cpu.db),
      pct(s.cpu.load),
      pct(s.cpu.others),
      s.transactionsPerResponse === null ? '–' : s.transactionsPerResponse.toFixed(1),
      measured ? formatStatuses(s.statuses) : '',
      rowStatus(s),
    ]
  })
  return table(
    ['case', 'conn', 'req/s', 'p50 ms', 'p99 ms', 'runs', 'server', 'pg', 'load', 'other', 'tx/req', 'statuses', 'status'],
    body,
    new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
  )
}

/** One cell of a target: its value and pass or FAIL, or why it has no value. */
export function cellText(t: TargetResult, i: number): string {
  const c = t.cells[i]
  if (!c) return ''
  if (c.value === null) return c.note ?? 'not measured'
  const v = t.path.startsWith('peak RSS')
    ? mb(c.value)
    : t.path.startsWith('in-process')
      ? `${num(c.value)}/s`
      : `${ratioText(t, c.value, c.pass)}×`
  return `${v} ${c.pass ? 'pass' : 'FAIL'}`
}

/** Two decimals, or three where two would round a ratio across its target (0.7987 shown as 0.80 and FAIL). */
function ratioText(t: TargetResult, value: number, pass: boolean | null): string {
  const min = Number(/≥ ([\d.]+)/.exec(t.target)?.[1])
  const shown = value.toFixed(2)
  return Number.isFinite(min) && pass !== null && Number(shown) >= min !== pass ? value.toFixed(3) : shown
}

export function formatTargets(targets: readonly TargetResult[], connections: readonly number[]): string {
  const body = targets.map((t) => {
    const perConn = t.cells.length > 1 || t.cells[0]?.connections !== null
    const cells = perConn ? connections.map((_, i) => cellText(t, i)) : [cellText(t, 0), ...connections.slice(1).map(() => '')]
    const result = t.pass === null ? 'not measured' : t.pass ? 'PASS' : 'FAIL'
    return [t.path, t.target, ...cells, result]
  })
  return table(['path', 'target', ...connections.map((c) => `${c} conn`), 'result'], body, new Set())
}

export function formatComparisons(lines: readonly ComparisonLine[], connections: readonly number[]): string {
  const cell = (l: ComparisonLine, i: number) => {
    const c = l.cells[i]
    if (!c) return ''
    if (c.value === null) return c.note ?? 'not measured'
    return l.unit === 'ratio' ? `${c.value.toFixed(2)}×` : `${c.value >= 0 ? '+' : '−'}${num(Math.abs(c.value))} µs`
  }
  const body = lines.map((l) => [l.path, l.against, ...connections.map((_, i) => cell(l, i))])
  return table(['path', 'against', ...connections.map((c) => `${c} conn`)], body, new Set(connections.map((_, i) => i + 2)))
}

function comparisonSection(report: BenchReport, connections: readonly number[]): string[] {
  if (report.comparisons.length === 0) return []
  return [
    'Comparisons (no target), within this run: ratios of rates; "server CPU over" is the server process\'s CPU',
    'per response less that of the row named (share of a core over the rate): for the openid exchanges, what the',
    "ID Token adds (the user's claims, at_hash, the signature), and between algorithms, the signature alone.",
    '',
    formatComparisons(report.comparisons, connections),
    '',
  ]
}

function disturbedNote(rows: readonly ReportRow[]): string[] {
  const n = rows.filter((r) => r.summary.disturbed).length
  return n === 0
    ? []
    : [`WARNING: ${n} row(s) shared the server CPU with other processes (other ≥ 25%); rerun on a quiet machine before quoting them.`]
}

const perSecond = (n: number | undefined) => `${Math.round(n ?? 0).toLocaleString('en-US')}/s`

/** The in-process verifier's rate, or why it was not measured. */
export function verifierLine(report: BenchReport): string {
  const v = report.verifier as { ok?: boolean; checksPerSecond?: number; asyncChecksPerSecond?: number; error?: string }
  return v.ok
    ? `in-process verifier, one core: ${perSecond(v.checksPerSecond)} checks as the Fastify plugin makes them ` +
        `(verifyCached, verify on a miss); ${perSecond(v.asyncChecksPerSecond)} with await verify()`
    : `in-process verifier: not measured (${v.error})`
}

export function peakRssLine(report: BenchReport): string {
  const rss = report.peakRss
  return `peak RSS: gatehouse ${mb(rss.gatehouse ?? null)}, growth server ${mb(rss.growth ?? null)}, baseline server ${mb(rss.baseline ?? null)}`
}

/** Everything printed on stdout at the end of a run. */
export function formatReport(report: BenchReport, file: string, connections: readonly number[]): string {
  const s = report.settings as { runs: number; durationS: number; serverCpu: number; loadCpu: number }
  return [
    '',
    `Gatehouse benchmark (${report.mode}): ${s.runs} run(s) of ${s.durationS} s per row, median shown; ` +
      `server and pg on CPU ${s.serverCpu}, load generator on CPU ${s.loadCpu}.`,
    '',
    formatRows(report.rows),
    '',
    'server, pg, load, other: share of one core during the measured run (pg: the PostgreSQL backends serving the',
    'benchmark database; other: anything else that ran on the server CPU). load ≥ 95% marks a row limited by the',
    'load generator; server + pg + other well under 100% means the server waited (commits, locks).',
    'tx/req: database transactions per response (pg_stat_database, approximate: backends report at most once a second).',
    '',
    verifierLine(report),
    peakRssLine(report),
    ...memoryLines(report.memoryAtEnd ?? []),
    '',
    'Targets (docs/performance.md "Targets"), ratios within this run:',
    '',
    formatTargets(report.targets, connections),
    '',
    ...comparisonSection(report, connections),
    ...disturbedNote(report.rows),
    ...report.notes.map((n) => `note: ${n}`),
    `results: ${file} (${report.elapsedS} s)`,
    '',
  ].join('\n')
}

/**
 * A complete run (`complete`: every row, not `--quick`) replaces the earlier one of its machine
 * kind in bench/results/; any other goes to bench/results/scratch/ (bench/results.ts).
 */
export function writeReport(report: BenchReport, complete: boolean): WrittenResult {
  const name = report.startedAt.replace(/[:]/g, '-').replace(/\.\d+Z$/, 'Z')
  return writeResult(RESULTS_DIR, {
    family: 'bench',
    name: `${name}${report.mode === 'quick' ? '-quick' : ''}`,
    kind: String(report.machine.kind),
    complete,
    data: report,
  })
}
