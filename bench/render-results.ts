import { readFileSync } from 'node:fs'
import { relative } from 'node:path'
import { benchArguments } from './arguments.js'
import type { BenchReport } from './report.js'
import { latestCompleteRun, writeResultsPage } from './results-page.js'

/*
 * `npm run bench:report [-- --file F] [-- --commit C]` (docs/performance.md "Result files"):
 * renders the results page from a results file, without measuring anything. By default the
 * newest complete run in bench/results/, whose page is bench/results/LATEST.md; any other
 * file's page goes to bench/results/scratch/. `--commit` names the commit measured, for files
 * written before the benchmark recorded it.
 */

const args = benchArguments(
  'npm run bench:report --',
  { file: { type: 'string' }, commit: { type: 'string' } },
  'docs/performance.md "Result files"',
)

const file = args.file ?? latestCompleteRun()
if (file === null) {
  console.error('bench/results/ holds no complete run of npm run bench; name one with --file')
  process.exit(2)
}
let report: BenchReport
try {
  report = JSON.parse(readFileSync(file, 'utf8')) as BenchReport
} catch (err) {
  console.error(`${file} cannot be read as a results file: ${(err as Error).message}`)
  process.exit(2)
}
if (!Array.isArray(report.targets) || !Array.isArray(report.rows) || typeof report.startedAt !== 'string') {
  console.error(`${file} is not a results file of npm run bench (no targets, rows or start time)`)
  process.exit(2)
}
const page = writeResultsPage(report, file, args.commit ? { commit: args.commit } : {})
console.log(`wrote ${relative(process.cwd(), page)} from ${relative(process.cwd(), file)}`)
