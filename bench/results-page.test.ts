import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { BenchReport } from './report.js'
import {
  LATEST_PAGE,
  latestCompleteRun,
  pagePath,
  renderResultsPage,
  summaryLines,
  targetsTable,
  writeResultsPage,
} from './results-page.js'
import { RESULTS_DIR } from './results.js'

/* The results page (bench/results-page.ts) against a small results file, and the committed page against the committed run. */

const FIXTURE = new URL('./fixtures/small-run.json', import.meta.url)
const fixture = (): BenchReport => JSON.parse(readFileSync(FIXTURE, 'utf8')) as BenchReport

describe('summaryLines', () => {
  it('names the run and counts the targets met; a target with a cell not measured is neither passed nor failed', () => {
    expect(summaryLines(fixture(), { file: 'x.json' })).toEqual([
      'Full run of 2026-11-30 10:15 UTC on amd-epyc-2cpu (Node v20.20.2, PostgreSQL 15.20): **2 of 5 targets pass**, 1 row(s) not a measurement.',
      'Pass: revocation; in-process verifier, cached.',
      'FAIL: introspection, cached; token info, uncached. Not measured: token info, cached.',
    ])
  })

  it('names the commit the report records, else the one given', () => {
    expect(summaryLines({ ...fixture(), commit: 'abc1234' }, { file: 'x.json', commit: 'fff0000' })[0]).toContain(' at abc1234: ')
    expect(summaryLines(fixture(), { file: 'x.json', commit: 'fff0000' })[0]).toContain(' at fff0000: ')
    expect(summaryLines({ ...fixture(), commit: 'abc1234', uncommittedChanges: true }, { file: 'x.json' })[0]).toContain(
      ' at abc1234 with uncommitted changes: ',
    )
  })
})

describe('targetsTable', () => {
  const table = targetsTable(fixture().targets, [16, 64])

  it('keeps every FAIL a FAIL, and shows three decimals where two would round a miss up to its target', () => {
    expect(table[0]).toBe('| path | target | 16 conn | 64 conn | result |')
    expect(table[2]).toBe('| introspection, cached | ≥ 0.6 × baseline A | 0.60× pass | 0.52× **FAIL** | **FAIL** |')
    expect(table[3]).toBe('| token info, uncached | ≥ 0.8 × baseline B | 0.799× **FAIL** | 1.09× pass | **FAIL** |')
    expect(table[4]).toBe('| revocation | ≥ 0.8 × baseline D | 1.00× pass | 0.99× pass | PASS |')
  })

  it('says why a cell has no value, and puts a target without connections in the first column', () => {
    expect(table[5]).toBe('| token info, cached | ≥ 0.8 × baseline A | row has errors | not measured | not measured |')
    expect(table[6]).toBe('| in-process verifier, cached | ≥ 1,000,000 checks/s | 1,834,932/s pass |  | PASS |')
  })
})

describe('renderResultsPage', () => {
  it('opens with the summary, then the machine, date, commit and the file of every run', () => {
    const page = renderResultsPage(fixture(), { file: '2026-11-30T10-15-42Z.json', commit: 'fff0000' })
    const lines = page.split('\n')
    expect(lines[0]).toBe('# Benchmark results')
    expect(lines.slice(5, 8)).toEqual(summaryLines(fixture(), { file: '', commit: 'fff0000' }).map((l, i) => (i < 2 ? `${l}\\` : l)))
    expect(page).toContain('- Date: 2026-11-30 10:15 UTC to 2026-11-30 10:47 UTC (32 minutes)\n')
    expect(page).toContain('- Commit: fff0000 (given to `npm run bench:report`; the results file does not record it)\n')
    expect(page).toContain('- Machine: amd-epyc-2cpu: AMD EPYC, 2 CPUs, 24 GB, Linux 6.18.44\n')
    expect(page).toContain('- Node v20.20.2, PostgreSQL 15.20 (shared_buffers 128MB, work_mem 4MB)\n')
    expect(page).toContain('- Every run of every row: [2026-11-30T10-15-42Z.json](2026-11-30T10-15-42Z.json)\n')
    expect(page).toContain('[docs/performance.md](../../docs/performance.md)')
    expect(page.endsWith('\n')).toBe(true)
  })

  it('shows the rows, the verifier, memory, comparisons and notes as the run printed them', () => {
    const page = renderResultsPage({ ...fixture(), commit: 'abc1234', uncommittedChanges: true }, { file: 'x.json' })
    expect(page).toContain('- Commit: abc1234 with uncommitted changes\n')
    expect(page).toMatch(/^baseline-a +16 +30,000 +0\.50 +2\.00 +3 +90% +0% +80% +5% +0\.0 +200×270000 +ok$/m)
    expect(page).toMatch(/^token-info-cached +16 .*NOT A MEASUREMENT: 12 connection errors$/m)
    expect(page).toContain('in-process verifier, one core: 1,834,932/s checks')
    expect(page).toContain('peak RSS: gatehouse 171 MB, growth server 139 MB, baseline server 209 MB\n')
    expect(page).toContain('memory of gatehouse at the end of its load: not read\n')
    expect(page).toMatch(/^revocation over its statements +baseline G +1\.07× +1\.08×$/m)
    expect(page).toContain('- PostgreSQL runs as a system service.\n')
  })

  it('says so when the report records no commit and none is given', () => {
    expect(renderResultsPage(fixture(), { file: 'x.json' })).toContain('- Commit: not recorded in the results file\n')
  })
})

describe('where a page goes', () => {
  let dir: string
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-results-page-'))
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  const put = (name: string) => copyFileSync(FIXTURE, join(dir, name))

  it('the newest complete run of npm run bench in the folder gets LATEST.md', () => {
    put('2026-11-28T00-00-00Z.json')
    put('2026-11-29T00-00-00Z.json')
    put('instructions-2026-11-30T00-00-00Z.json')
    writeFileSync(join(dir, 'notes.json'), '{}')
    expect(latestCompleteRun(dir)).toBe(join(dir, '2026-11-29T00-00-00Z.json'))
    const page = writeResultsPage(fixture(), join(dir, '2026-11-29T00-00-00Z.json'), {}, dir)
    expect(page).toBe(join(dir, LATEST_PAGE))
    expect(readFileSync(page, 'utf8')).toContain('[2026-11-29T00-00-00Z.json](2026-11-29T00-00-00Z.json)')
  })

  it('a partial run, or an older complete one, goes to scratch/ and leaves LATEST.md alone', () => {
    put('2026-11-28T00-00-00Z.json')
    put('2026-11-29T00-00-00Z.json')
    writeFileSync(join(dir, LATEST_PAGE), 'the latest run')
    mkdirSync(join(dir, 'scratch'))
    copyFileSync(FIXTURE, join(dir, 'scratch', '2026-11-30T00-00-00Z-quick.json'))
    const partial = writeResultsPage(fixture(), join(dir, 'scratch', '2026-11-30T00-00-00Z-quick.json'), {}, dir)
    expect(partial).toBe(join(dir, 'scratch', '2026-11-30T00-00-00Z-quick.md'))
    expect(pagePath(join(dir, '2026-11-28T00-00-00Z.json'), dir)).toBe(join(dir, 'scratch', '2026-11-28T00-00-00Z.md'))
    const older = writeResultsPage(fixture(), join(dir, '2026-11-28T00-00-00Z.json'), {}, dir)
    expect(readFileSync(older, 'utf8')).toContain('[2026-11-28T00-00-00Z.json](../2026-11-28T00-00-00Z.json)')
    expect(readFileSync(join(dir, LATEST_PAGE), 'utf8')).toBe('the latest run')
    expect(readdirSync(join(dir, 'scratch')).sort()).toEqual([
      '2026-11-28T00-00-00Z.md',
      '2026-11-30T00-00-00Z-quick.json',
      '2026-11-30T00-00-00Z-quick.md',
    ])
  })
})

describe('the committed results page', () => {
  const latest = latestCompleteRun()!
  const report = JSON.parse(readFileSync(latest, 'utf8')) as BenchReport
  const committed = readFileSync(join(RESULTS_DIR, LATEST_PAGE), 'utf8')
  const commit = /^- Commit: (\w+) \(given to/m.exec(committed)?.[1]

  it('is the page of the newest complete run in bench/results/ (npm run bench:report renders it again)', () => {
    expect(committed).toBe(renderResultsPage(report, { file: latest.slice(RESULTS_DIR.length), ...(commit ? { commit } : {}) }))
  })

  it('is summed up at the top of docs/performance.md in the same three lines', () => {
    const guide = readFileSync(new URL('../docs/performance.md', import.meta.url), 'utf8')
    for (const line of summaryLines(report, { file: latest, ...(commit ? { commit } : {}) })) expect(guide).toContain(line)
  })
})
