import { type BenchCase, distinctCases } from './cases.js'
import { LoadGenerator } from './load.js'
import { type MeasureContext, measureRun, probe } from './measure.js'
import type { ReportRow } from './report.js'
import { type RowSummary, rowKey, summarizeRuns } from './stats.js'

/*
 * The rows of a benchmark run and the rounds that fill them: every case is probed once, then
 * each round runs every group (bench/cases.ts mainPhaseGroups) at each concurrency, its rows
 * one after the other, so that drift over the run hits all rows alike and each ratio pairs runs
 * made seconds apart. Every run carries its place in the phase (`seq`) for that pairing.
 */

export interface RoundOptions {
  runs: number
  connections: readonly number[]
  loadCpu: number
  log: (msg: string) => void
}

type Row = ReportRow & { failure?: string }

export class RowBook {
  private readonly rows = new Map<string, Row>()

  constructor(private readonly opts: RoundOptions) {}

  private row(c: BenchCase, connections: number, phase?: string): Row {
    const key = rowKey(c.id, connections, phase)
    let r = this.rows.get(key)
    if (!r) {
      r = { key, caseId: c.id, title: c.title, connections, runs: [], summary: summarizeRuns([]), ...(phase ? { phase } : {}) }
      this.rows.set(key, r)
    }
    return r
  }

  async runPhase(ctx: MeasureContext, groups: readonly (readonly BenchCase[])[], phase?: string): Promise<void> {
    const { runs, connections, log } = this.opts
    for (const c of distinctCases(groups)) {
      const problem = await probe(ctx, c)
      if (problem) {
        log(`${c.id}${phase ? ` (${phase})` : ''}: ${problem}`)
        for (const conn of connections) this.row(c, conn, phase).failure = problem
      }
    }
    let seq = 0
    for (let round = 1; round <= runs; round++) {
      for (const group of groups) {
        for (const conn of connections) {
          for (const c of group) {
            const r = this.row(c, conn, phase)
            if (r.failure) continue
            try {
              const s = { ...(await measureRun(ctx, c, conn)), seq: seq++ }
              r.runs.push(s)
              const flag = s.errors + s.unexpected + s.mismatches > 0 || s.poolExhausted ? '  (errors)' : ''
              log(
                `round ${round}/${runs} ${r.key}: ${Math.round(s.rate)} req/s, p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms${flag}`,
              )
            } catch (err) {
              r.failure = `run failed: ${err instanceof Error ? err.message : String(err)}`
              log(`${r.key}: ${r.failure}`)
              if (ctx.load.child.exited()) ctx.load = await LoadGenerator.start(this.opts.loadCpu)
            }
          }
        }
      }
    }
  }

  /** Rows in print order (main phase, then the growth phases in `phases` order), summarised. */
  summarize(phases: readonly string[]): { rows: ReportRow[]; summaries: Record<string, RowSummary> } {
    const order = (r: Row) => (r.phase === undefined ? -1 : phases.indexOf(r.phase))
    const rows: ReportRow[] = []
    const summaries: Record<string, RowSummary> = {}
    for (const r of [...this.rows.values()].sort((a, b) => order(a) - order(b))) {
      const summary = summarizeRuns(r.runs)
      if (r.failure) summary.problems = [r.failure, ...summary.problems.filter((p) => p !== 'no runs')]
      summary.valid = summary.problems.length === 0
      summaries[r.key] = summary
      const { failure: _failure, ...rest } = r
      rows.push({ ...rest, summary })
    }
    return { rows, summaries }
  }
}
