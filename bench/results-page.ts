import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, relative, resolve } from 'node:path'
import { cellText, formatComparisons, formatRows, memoryLines, peakRssLine, type BenchReport, verifierLine } from './report.js'
import { machineKind, type MachineLabel, RESULTS_DIR } from './results.js'
import type { TargetResult } from './stats.js'

/*
 * The results page (docs/performance.md "Reading the results"): a run as markdown, beside the
 * JSON that holds every run of it. A complete run's page is bench/results/LATEST.md, which the
 * performance guide links; any other run's goes to bench/results/scratch/ with its JSON
 * (bench/results.ts). The page is rendered from the JSON alone, so `npm run bench:report`
 * renders it again without measuring anything.
 */

export const LATEST_PAGE = 'LATEST.md'

/** What the page says about where it came from, beside the report. */
export interface PageSource {
  /** The JSON file the page is rendered from, as the page links it (relative to the page). */
  file: string
  /** The commit measured, when the report does not record it (runs written before it did). */
  commit?: string
}

/** The machine kind as the report records it, or as bench/results.ts derives it for files written before it did. */
const kindOf = (machine: Record<string, unknown>) =>
  typeof machine.kind === 'string' ? machine.kind : machineKind(machine as MachineLabel, '')
const when = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`
const joined = (names: readonly string[]) => (names.length === 0 ? 'none' : names.join('; '))
const postgresVersion = (v: unknown) => (typeof v === 'string' ? (/^PostgreSQL [\d.]+/.exec(v)?.[0] ?? v) : 'PostgreSQL (version not read)')

/** A full run of every row, a `--quick` one, or one of the rows `--only` chose. */
function runLabel(report: BenchReport): string {
  const only = (report.settings as { only?: string[] | null }).only
  return `${report.mode === 'full' ? 'Full' : 'Quick'} run${only ? ` (--only ${only.join(',')})` : ''}`
}

/** The commit a page names: the report's own record, else the one given, else says it is unknown. */
export function commitOf(report: BenchReport, source: PageSource): string {
  if (report.commit) return `${report.commit}${report.uncommittedChanges ? ' with uncommitted changes' : ''}`
  if (source.commit) return `${source.commit} (given to \`npm run bench:report\`; the results file does not record it)`
  return 'not recorded in the results file'
}

/**
 * Three lines a reader takes away: which run, how many targets it met, and which it met and
 * missed by name. A target with a cell not measured is neither passed nor failed.
 */
export function summaryLines(report: BenchReport, source: PageSource): [string, string, string] {
  const m = report.machine
  const passed = report.targets.filter((t) => t.pass === true).map((t) => t.path)
  const failed = report.targets.filter((t) => t.pass === false).map((t) => t.path)
  const unmeasured = report.targets.filter((t) => t.pass === null).map((t) => t.path)
  const invalid = report.rows.filter((r) => !r.summary.valid).length
  const commit = report.commit ? `${report.commit}${report.uncommittedChanges ? ' with uncommitted changes' : ''}` : source.commit
  return [
    `${runLabel(report)} of ${when(report.startedAt)} on ${kindOf(m)} (Node ${String(m.node)}, ` +
      `${postgresVersion(m.postgres)})${commit ? ` at ${commit}` : ''}: ` +
      `**${passed.length} of ${report.targets.length} targets pass**` +
      (invalid > 0 ? `, ${invalid} row(s) not a measurement.` : '.'),
    `Pass: ${joined(passed)}.`,
    `FAIL: ${joined(failed)}.` + (unmeasured.length > 0 ? ` Not measured: ${joined(unmeasured)}.` : ''),
  ]
}

const escapeCell = (text: string) => text.replaceAll('|', '\\|')
const markdownTable = (header: readonly string[], rows: readonly (readonly string[])[]) =>
  [header, header.map(() => '---'), ...rows].map((cells) => `| ${cells.map(escapeCell).join(' | ')} |`)

/** The targets as a markdown table: each cell's ratio with pass or FAIL, and the target's result. */
export function targetsTable(targets: readonly TargetResult[], connections: readonly number[]): string[] {
  const rows = targets.map((t) => {
    const perConn = t.cells.length > 1 || t.cells[0]?.connections !== null
    const cells = perConn ? connections.map((_, i) => cellText(t, i)) : [cellText(t, 0), ...connections.slice(1).map(() => '')]
    const result = t.pass === null ? 'not measured' : t.pass ? 'PASS' : '**FAIL**'
    return [t.path, t.target, ...cells.map((c) => c.replace(/ FAIL$/, ' **FAIL**')), result]
  })
  return markdownTable(['path', 'target', ...connections.map((c) => `${c} conn`), 'result'], rows)
}

function runLines(report: BenchReport, source: PageSource): string[] {
  const m = report.machine
  const s = report.settings as { runs?: number; durationS?: number; growthLarge?: number }
  return [
    `- Date: ${when(report.startedAt)} to ${when(report.finishedAt)} (${Math.round(report.elapsedS / 60)} minutes)`,
    `- Commit: ${commitOf(report, source)}`,
    `- Machine: ${kindOf(m)}: ${String(m.cpuModel)}, ${String(m.cpus)} CPUs, ${String(m.memoryGB)} GB, ${String(m.os)}`,
    `- Node ${String(m.node)}, ${postgresVersion(m.postgres)} (${settingsText(m.postgresSettings)})`,
    `- Load average at start and end: ${JSON.stringify(m.loadAverageAtStart)}, ${JSON.stringify(m.loadAverageAtEnd)}`,
    `- Settings: ${report.mode}, ${s.runs} run(s) of ${s.durationS} s per row, growth to ${Number(s.growthLarge).toLocaleString('en-US')} tokens`,
    `- Every run of every row: [${basename(source.file)}](${source.file})`,
  ]
}

const settingsText = (settings: unknown) =>
  Object.entries((settings ?? {}) as Record<string, unknown>)
    .map(([name, value]) => `${name} ${String(value)}`)
    .join(', ') || 'settings not read'
const textBlock = (text: string) => ['```text', text, '```']

function measurementSections(report: BenchReport, connections: readonly number[]): string[] {
  return [
    '## Rows',
    '',
    "The median of each row's runs. `server`, `pg`, `load`, `other`: share of one core during the run; `tx/req`: database",
    'transactions per response. A row marked anything but `ok` is not a measurement, or not one to quote.',
    '',
    ...textBlock(formatRows(report.rows)),
    '',
    '## The verifier and memory',
    '',
    ...textBlock([verifierLine(report), peakRssLine(report), ...memoryLines(report.memoryAtEnd ?? [])].join('\n')),
    '',
    ...(report.comparisons.length === 0
      ? []
      : ['## Comparisons (no target)', '', ...textBlock(formatComparisons(report.comparisons, connections)), '']),
    ...(report.notes.length === 0 ? [] : ['## Notes', '', ...report.notes.map((n) => `- ${n}`), '']),
  ]
}

/** The whole page, ending in a newline. */
export function renderResultsPage(report: BenchReport, source: PageSource): string {
  const connections = (report.settings as { connections?: number[] }).connections ?? [16, 64]
  return [
    '# Benchmark results',
    '',
    'Written by `npm run bench` (a page rendered again from the JSON by `npm run bench:report`); how to read it is in',
    '[docs/performance.md](../../docs/performance.md). Each ratio is taken within this run, against the baseline beside it.',
    '',
    ...summaryLines(report, source).map((l, i, all) => (i < all.length - 1 ? `${l}\\` : l)),
    '',
    '## This run',
    '',
    ...runLines(report, source),
    '',
    '## Targets',
    '',
    'FAIL stays FAIL: a target missed in this run is shown as missed. docs/performance.md "Known FAIL rows" says which',
    'misses are known and what each one means.',
    '',
    ...targetsTable(report.targets, connections),
    '',
    ...measurementSections(report, connections),
  ].join('\n')
}

/** The newest complete run of `npm run bench` in `dir` (the names are start times, so they sort), or null. */
export function latestCompleteRun(dir = RESULTS_DIR): string | null {
  const runs = readdirSync(dir)
    .filter((f) => /^\d{4}-\d\d-\d\dT[\d-]+Z\.json$/.test(f))
    .sort()
  return runs.length === 0 ? null : join(dir, runs.at(-1)!)
}

/**
 * Where the page of the run in `file` goes: LATEST.md for the newest complete run in `dir`,
 * else beside the scratch runs, so that a partial run or an older file never replaces it.
 */
export function pagePath(file: string, dir = RESULTS_DIR): string {
  const latest = latestCompleteRun(dir)
  if (latest !== null && resolve(file) === resolve(latest)) return join(dir, LATEST_PAGE)
  const name = basename(file).replace(/\.json$/, '.md')
  return resolve(dirname(file)) === resolve(dir, 'scratch') ? join(dirname(file), name) : join(dir, 'scratch', name)
}

/** Renders and writes the page of the run in `file`; where it went. */
export function writeResultsPage(report: BenchReport, file: string, source: Omit<PageSource, 'file'> = {}, dir = RESULTS_DIR): string {
  const page = pagePath(file, dir)
  mkdirSync(dirname(page), { recursive: true })
  writeFileSync(page, renderResultsPage(report, { ...source, file: relative(dirname(page), file) }))
  return page
}
