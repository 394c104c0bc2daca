import { describe, expect, it } from 'vitest'
import {
  type CpuShares,
  evaluateComparisons,
  evaluateTargets,
  median,
  parseRun,
  pairedRatio,
  percentile,
  type RawRun,
  ratio,
  rowKey,
  type RowSummary,
  type RunSample,
  selectCaseIds,
  summarizeRuns,
} from './stats.js'

function raw(overrides: { statuses?: Record<string, number>; errors?: number; timeouts?: number; duration?: number } = {}): RawRun {
  const statuses = overrides.statuses ?? { 200: 1000 }
  return {
    autocannon: {
      errors: overrides.errors ?? 0,
      timeouts: overrides.timeouts ?? 0,
      statusCodeStats: Object.fromEntries(Object.entries(statuses).map(([s, count]) => [s, { count }])),
      duration: overrides.duration ?? 1,
    },
    latency: { p50: 1.5, p99: 7.25 },
    mismatches: 0,
    poolExhausted: false,
  }
}

const cpu = (load: number | null): CpuShares => ({ server: 0.9, db: 0.3, load, others: 0.05 })

function sample(rate: number, extra: Partial<RunSample> = {}): RunSample {
  return { ...parseRun(raw({ statuses: { 200: rate } }), [200], cpu(0.4)), ...extra }
}

function validRow(rate: number): RowSummary {
  return summarizeRuns([sample(rate)])
}

/** The introspection's growth row and its baseline B at one connection count: each phase as [row, B]. */
function growthRows(connections: number, small: [RowSummary, RowSummary], large: [RowSummary, RowSummary]): Record<string, RowSummary> {
  return {
    [rowKey('introspect-miss-growth', connections, '10k')]: small[0],
    [rowKey('baseline-b', connections, '10k')]: small[1],
    [rowKey('introspect-miss-growth', connections, '1M')]: large[0],
    [rowKey('baseline-b', connections, '1M')]: large[1],
  }
}

describe('parseRun', () => {
  it('reads rate, latency and status counts from the load worker report', () => {
    const s = parseRun(raw({ statuses: { 200: 24_000, 201: 1_000 }, duration: 3.2 }), [200, 201], cpu(0.5))
    expect(s).toMatchObject({
      rate: 25_000 / 3.2,
      p50: 1.5,
      p99: 7.25,
      responses: 25_000,
      errors: 0,
      unexpected: 0,
      statuses: { 200: 24_000, 201: 1_000 },
      durationS: 3.2,
      cpu: { server: 0.9, db: 0.3, load: 0.5, others: 0.05 },
    })
  })

  it('counts every status outside the expected ones, 3xx included', () => {
    const s = parseRun(raw({ statuses: { 200: 5, 302: 3, 404: 2, 500: 1 } }), [200])
    expect(s.unexpected).toBe(6)
    expect(s.responses).toBe(11)
  })

  it('treats a redirect as correct when the case expects it', () => {
    expect(parseRun(raw({ statuses: { 302: 10, 303: 2 } }), [302, 303]).unexpected).toBe(0)
  })

  it('has a rate of 0, not NaN, for a run that lasted no time', () => {
    expect(parseRun(raw({ duration: 0 }), [200]).rate).toBe(0)
  })

  it('adds timeouts to connection errors', () => {
    expect(parseRun(raw({ errors: 2, timeouts: 3 }), [200]).errors).toBe(5)
  })
})

describe('median and percentile', () => {
  it('takes the middle value, or the mean of the middle two', () => {
    expect(median([3, 1, 2])).toBe(2)
    expect(median([4, 1, 3, 2])).toBe(2.5)
    expect(median([7])).toBe(7)
    expect(median([])).toBeNaN()
  })

  it('does not reorder its input', () => {
    const xs = [3, 1, 2]
    median(xs)
    expect(xs).toEqual([3, 1, 2])
  })

  it('uses nearest rank', () => {
    const xs = Array.from({ length: 100 }, (_, i) => 100 - i)
    expect(percentile(xs, 50)).toBe(50)
    expect(percentile(xs, 99)).toBe(99)
    expect(percentile(xs, 100)).toBe(100)
    expect(percentile([5], 99)).toBe(5)
  })
})

describe('summarizeRuns', () => {
  it('reports the median of the runs and sums the counts', () => {
    const s = summarizeRuns([sample(900), sample(1100), sample(1000)])
    expect(s.rate).toBe(1000)
    expect(s.runs).toBe(3)
    expect(s.rates).toEqual([900, 1100, 1000])
    expect(s.responses).toBe(3000)
    expect(s.statuses).toEqual({ 200: 3000 })
    expect(s.valid).toBe(true)
    expect(s.cpu).toEqual({ server: 0.9, db: 0.3, load: 0.4, others: 0.05 })
    expect(s.transactionsPerResponse).toBeNull()
  })

  it('reports the median of the database transactions per response', () => {
    const s = summarizeRuns([
      sample(1000, { transactionsPerResponse: 2.1 }),
      sample(1000, { transactionsPerResponse: 1.9 }),
      sample(1000, { transactionsPerResponse: 2 }),
    ])
    expect(s.transactionsPerResponse).toBe(2)
  })

  it('makes a row with any error, unexpected status, failed check or reused item not a measurement', () => {
    expect(summarizeRuns([sample(1000), sample(1000, { errors: 1 })]).valid).toBe(false)
    const bad = summarizeRuns([parseRun(raw({ statuses: { 200: 10, 404: 3 } }), [200])])
    expect(bad.valid).toBe(false)
    expect(bad.problems.join()).toContain('404×3')
    expect(summarizeRuns([sample(1000, { mismatches: 1 })]).valid).toBe(false)
    expect(summarizeRuns([sample(1000, { poolExhausted: true })]).valid).toBe(false)
    expect(summarizeRuns([]).valid).toBe(false)
  })

  it('flags a row whose server CPU was ≥ 25% taken by other processes, without invalidating it', () => {
    const s = summarizeRuns([sample(1000, { cpu: { server: 0.5, db: 0.2, load: 0.3, others: 0.3 } })])
    expect(s.disturbed).toBe(true)
    expect(s.valid).toBe(true)
    expect(summarizeRuns([sample(1000)]).disturbed).toBe(false)
  })

  it('flags a row whose load generator used ≥ 95% of its core', () => {
    expect(summarizeRuns([sample(1000, { cpu: cpu(0.97) })]).loadLimited).toBe(true)
    expect(summarizeRuns([sample(1000, { cpu: cpu(0.9) })]).loadLimited).toBe(false)
    expect(summarizeRuns([sample(1000, { cpu: cpu(null) })]).loadLimited).toBe(false)
  })
})

describe('ratio', () => {
  it('divides the row rate by the baseline rate', () => {
    expect(ratio(validRow(4000), validRow(8000))).toBe(0.5)
  })

  it('is null when either side is missing or not a measurement', () => {
    const broken = summarizeRuns([sample(1000, { errors: 1 })])
    expect(ratio(undefined, validRow(1))).toBeNull()
    expect(ratio(validRow(1), undefined)).toBeNull()
    expect(ratio(broken, validRow(1))).toBeNull()
    expect(ratio(validRow(1), broken)).toBeNull()
  })
})

describe('pairedRatio', () => {
  const runs = (pairs: readonly (readonly [number, number])[]) => summarizeRuns(pairs.map(([rate, seq]) => sample(rate, { seq })))

  it('divides each run by the baseline run nearest to it, and takes the median of those ratios', () => {
    // The machine slows in the second round: the medians' ratio (3000 / 8000) mixes the rounds.
    const baseline = runs([
      [10_000, 0],
      [8_000, 10],
      [4_000, 20],
    ])
    const row = runs([
      [5_000, 2],
      [3_000, 12],
      [2_000, 22],
    ])
    expect(ratio(row, baseline)).toBe(3_000 / 8_000)
    expect(pairedRatio(row, baseline)).toBe(0.5)
    expect(summarizeRuns([sample(1, { seq: 4 })]).seqs).toEqual([4])
  })

  it('pairs a baseline run twice when it is the nearest for two runs of the row', () => {
    const baseline = runs([
      [10_000, 0],
      [2_000, 30],
    ])
    const row = runs([
      [5_000, 1],
      [6_000, 3],
      [1_000, 29],
    ])
    expect(pairedRatio(row, baseline)).toBe(0.5)
  })

  it('is the ratio of the medians when a side has runs without a place (results written before them)', () => {
    const placed = runs([
      [4_000, 1],
      [6_000, 2],
    ])
    const unplaced = summarizeRuns([sample(10_000), sample(10_000, { seq: 3 })])
    expect(unplaced.seqs).toBeUndefined()
    expect(pairedRatio(placed, unplaced)).toBe(0.5)
    expect(pairedRatio(validRow(4000), validRow(8000))).toBe(0.5)
  })

  it('is null when either side is missing or not a measurement', () => {
    const broken = summarizeRuns([sample(1000, { errors: 1, seq: 1 })])
    expect(pairedRatio(broken, runs([[1000, 2]]))).toBeNull()
    expect(pairedRatio(runs([[1000, 2]]), undefined)).toBeNull()
  })

  it('is what evaluateTargets and evaluateComparisons report', () => {
    // K's last run is slow and its baseline's is not: the medians' ratio (6000 / 8000) fails 0.95.
    const conns = [16]
    const rows = {
      [rowKey('baseline-a', 16)]: runs([
        [10_000, 0],
        [4_000, 10],
        [8_000, 20],
      ]),
      [rowKey('baseline-m', 16)]: runs([
        [10_000, 1],
        [4_000, 11],
        [8_000, 21],
      ]),
      [rowKey('baseline-k', 16)]: runs([
        [9_800, 2],
        [3_920, 12],
        [6_000, 22],
      ]),
    }
    expect(ratio(rows[rowKey('baseline-k', 16)], rows[rowKey('baseline-a', 16)])).toBe(0.75)
    const extras = { verifierRate: null, peakRssBytes: null, growthPhases: ['10k', '1M'] as const }
    const guarded = evaluateTargets(rows, conns, extras).find((t) => t.path === 'route guarded by the verifier')!
    expect(guarded.cells[0]!.value).toBeCloseTo(0.98, 10)
    expect(guarded.pass).toBe(true)
    const line = evaluateComparisons(rows, conns).find((l) => l.path === 'route guarded by the verifier' && l.unit === 'ratio')!
    expect(line.against).toBe('baseline M')
    expect(line.cells[0]!.value).toBeCloseTo(0.98, 10)
  })
})

describe('evaluateTargets', () => {
  const conns = [16, 64]
  const base = {
    [rowKey('baseline-a', 16)]: validRow(20_000),
    [rowKey('baseline-a', 64)]: validRow(20_000),
    [rowKey('baseline-b', 16)]: validRow(10_000),
    [rowKey('baseline-b', 64)]: validRow(10_000),
  }
  const extras = { verifierRate: null, peakRssBytes: null, growthPhases: ['10k', '1M'] as const }

  it('passes a ratio target only when every concurrency meets it', () => {
    const rows = {
      ...base,
      [rowKey('introspect-cached', 16)]: validRow(12_000),
      [rowKey('introspect-cached', 64)]: validRow(11_000),
    }
    const t = evaluateTargets(rows, conns, extras).find((x) => x.path === 'introspection, cached')!
    expect(t.target).toBe('≥ 0.6 × baseline A')
    expect(t.cells.map((c) => [c.connections, c.value, c.pass])).toEqual([
      [16, 0.6, true],
      [64, 0.55, false],
    ])
    expect(t.pass).toBe(false)
  })

  it('judges a revocation against baseline D, the INSERT that also notifies', () => {
    const rows = {
      [rowKey('baseline-c', 16)]: validRow(6_000),
      [rowKey('baseline-d', 16)]: validRow(4_000),
      [rowKey('revoke', 16)]: validRow(3_400),
    }
    const t = evaluateTargets(rows, [16], extras).find((x) => x.path === 'revocation')!
    expect(t.target).toBe('≥ 0.8 × baseline D')
    expect(t.cells.map((c) => [c.value, c.pass])).toEqual([[0.85, true]])
  })

  it('reports not measured, not a failure, for a missing endpoint', () => {
    const t = evaluateTargets(base, conns, extras).find((x) => x.path === 'introspection, cache miss')!
    expect(t.pass).toBeNull()
    expect(t.cells[0]).toMatchObject({ value: null, pass: null, note: 'not measured' })
  })

  it('compares the growth phases: at most 10% slower', () => {
    // Its baseline at the same rate in both phases: the phases' ratio is the row's own.
    const b = validRow(10_000)
    const rows = {
      ...growthRows(16, [validRow(10_000), b], [validRow(9_000), b]),
      ...growthRows(64, [validRow(10_000), b], [validRow(8_900), b]),
    }
    const t = evaluateTargets(rows, conns, extras).find((x) => x.path.includes('introspect-miss'))!
    expect(t.path).toBe('growth 10k → 1M tokens, introspect-miss')
    expect(t.cells.map((c) => c.pass)).toEqual([true, false])
    expect(t.pass).toBe(false)
  })

  it("takes each growth phase over its baseline beside it when both phases ran one, so the VM's drift between them cancels", () => {
    const rows = {
      // The VM ran a fifth slower in the second phase: the growth row and its baseline alike.
      ...growthRows(16, [validRow(4_000), validRow(5_000)], [validRow(3_040), validRow(4_000)]),
      // Its baseline failed in one phase: the cell says so and has no number.
      ...growthRows(64, [validRow(4_000), validRow(5_000)], [validRow(3_600), summarizeRuns([sample(4_000, { errors: 3 })])]),
    }
    const t = evaluateTargets(rows, conns, extras).find((x) => x.path.includes('introspect-miss'))!
    expect(t.target).toBe('≤ 10% slower over baseline B (ratio ≥ 0.9)')
    // 3,040 / 4,000 over 4,000 / 5,000: 0.95, where the plain ratio of the phases is 0.76.
    expect(t.cells[0]!.value).toBeCloseTo(0.95)
    expect(t.cells[0]!.pass).toBe(true)
    expect(t.cells[1]).toMatchObject({ value: null, pass: null, note: 'baseline not measured' })
  })

  it("sets each growth row against its own work's growth over the same baseline (GROWTH_BESIDE)", () => {
    const rows = {
      // B at the same rate in both phases; R lost a fifth with the larger table, the row a quarter.
      ...growthRows(16, [validRow(4_000), validRow(5_000)], [validRow(3_000), validRow(5_000)]),
      [rowKey('baseline-r', 16, '10k')]: validRow(4_500),
      [rowKey('baseline-r', 16, '1M')]: validRow(3_600),
    }
    const lines = evaluateComparisons(rows, [16], ['10k', '1M']).filter((l) => l.path.startsWith('growth'))
    expect(lines.map((l) => [l.path, l.against])).toEqual([
      ['growth 10k → 1M tokens, introspect-miss: its own work (R)', 'baseline B, 1M over 10k'],
      ['growth 10k → 1M tokens, introspect-miss over its own work', "R's growth"],
    ])
    expect(lines[0]!.cells[0]!.value).toBeCloseTo(0.8)
    // The row's 0.75 over R's 0.8.
    expect(lines[1]!.cells[0]!.value).toBeCloseTo(0.9375)
    // Without the phases, or without the ceiling's rows, no growth line.
    expect(evaluateComparisons(rows, [16]).some((l) => l.path.startsWith('growth'))).toBe(false)
    const { [rowKey('baseline-r', 16, '1M')]: _r, ...withoutR } = rows
    expect(evaluateComparisons(withoutR, [16], ['10k', '1M']).some((l) => l.path.startsWith('growth'))).toBe(false)
  })

  it('checks the verifier rate and the peak RSS as absolute limits', () => {
    const targets = evaluateTargets(base, conns, { ...extras, verifierRate: 1_200_000, peakRssBytes: 210 * 1024 * 1024 })
    expect(targets.find((x) => x.path.startsWith('in-process'))!.pass).toBe(true)
    expect(targets.find((x) => x.path.startsWith('peak RSS'))!.pass).toBe(false)
    const low = evaluateTargets(base, conns, { ...extras, verifierRate: 999_999, peakRssBytes: 150 * 1024 * 1024 })
    expect(low.find((x) => x.path.startsWith('in-process'))!.pass).toBe(false)
    expect(low.find((x) => x.path.startsWith('peak RSS'))!.pass).toBe(true)
  })

  it('lists every target of the issue', () => {
    expect(evaluateTargets({}, conns, extras).map((t) => t.path)).toEqual([
      'introspection, cached',
      'introspection, cache miss',
      'token info, cached',
      'token info, uncached',
      'code exchange',
      'revocation',
      'authorize, remembered consent',
      'route guarded by the verifier',
      'in-process verifier, cached',
      'growth 10k → 1M tokens, introspect-miss',
      'growth 10k → 1M tokens, code-exchange',
      'peak RSS under load',
    ])
  })
})

describe('evaluateComparisons', () => {
  const withServer = (rate: number, server: number): RowSummary => {
    const row = validRow(rate)
    return { ...row, cpu: { ...row.cpu, server } }
  }

  it('sets each openid exchange against the plain exchange and baseline C, with the server CPU it adds per response', () => {
    const rows = {
      [rowKey('baseline-c', 16)]: validRow(6000),
      [rowKey('code-exchange', 16)]: withServer(3000, 0.4),
      [rowKey('code-exchange-openid-es256', 16)]: withServer(2400, 0.5),
    }
    const lines = evaluateComparisons(rows, [16]).filter((l) => l.path.includes('ID Token'))
    expect(lines.map((l) => [l.path, l.against, l.unit])).toEqual([
      ['code exchange + ID Token ES256', 'code-exchange', 'ratio'],
      ['code exchange + ID Token ES256', 'baseline C', 'ratio'],
      ['code exchange + ID Token ES256', 'server CPU over code-exchange', 'us'],
    ])
    const [plain, c, cost] = lines.map((l) => l.cells[0]!.value!)
    expect(plain).toBeCloseTo(0.8)
    expect(c).toBeCloseTo(0.4)
    // 0.5 / 2400 s − 0.4 / 3000 s per response
    expect(cost).toBeCloseTo(0.5e6 / 2400 - 0.4e6 / 3000)
  })

  it("sets each write path against its own statements (E–G, and P with its notice heard), and those against the target's baseline, in rate and in CPU", () => {
    const withCpu = (rate: number, server: number, db: number): RowSummary => ({
      ...validRow(rate),
      cpu: { ...validRow(rate).cpu, server, db },
    })
    const rows = {
      [rowKey('baseline-d', 16)]: withCpu(2000, 0.4, 0.5),
      [rowKey('baseline-g', 16)]: withCpu(1800, 0.38, 0.55),
      [rowKey('baseline-p', 16)]: withCpu(1600, 0.42, 0.56),
      [rowKey('revoke', 16)]: withCpu(1500, 0.5, 0.45),
    }
    const lines = evaluateComparisons(rows, [16])
    expect(lines.map((l) => [l.path, l.against, l.unit])).toEqual([
      ['revocation over its statements', 'baseline G', 'ratio'],
      ['revocation over its statements', 'server CPU over baseline-g', 'us'],
      ['revocation over its statements', 'pg CPU over baseline-g', 'us'],
      ["revocation's statements (G)", 'baseline D', 'ratio'],
      ["revocation's statements (G)", 'server CPU over baseline-d', 'us'],
      ["revocation's statements (G)", 'pg CPU over baseline-d', 'us'],
      ['revocation over its statements, its notice heard', 'baseline P', 'ratio'],
      ['revocation over its statements, its notice heard', 'server CPU over baseline-p', 'us'],
      ['revocation over its statements, its notice heard', 'pg CPU over baseline-p', 'us'],
      ["revocation's statements, its notice heard (P)", 'baseline D', 'ratio'],
      ["revocation's statements, its notice heard (P)", 'server CPU over baseline-d', 'us'],
      ["revocation's statements, its notice heard (P)", 'pg CPU over baseline-d', 'us'],
    ])
    const [overG, serverOverG, pgOverG, gOverD, , , overP, serverOverP, pgOverP, pOverD] = lines.map((l) => l.cells[0]!.value!)
    expect(overG).toBeCloseTo(1500 / 1800)
    expect(serverOverG).toBeCloseTo(0.5e6 / 1500 - 0.38e6 / 1800)
    expect(pgOverG).toBeCloseTo(0.45e6 / 1500 - 0.55e6 / 1800)
    expect(gOverD).toBeCloseTo(0.9)
    expect(overP).toBeCloseTo(1500 / 1600)
    expect(serverOverP).toBeCloseTo(0.5e6 / 1500 - 0.42e6 / 1600)
    expect(pgOverP).toBeCloseTo(0.45e6 / 1500 - 0.56e6 / 1600)
    expect(pOverD).toBeCloseTo(0.8)
  })

  it('sets each cached path against its own work (I, J), and that work against A, in rate and in server CPU', () => {
    const withCpu = (rate: number, server: number): RowSummary => ({ ...validRow(rate), cpu: { ...validRow(rate).cpu, server } })
    const rows = {
      [rowKey('baseline-a', 64)]: withCpu(50_000, 0.95),
      [rowKey('baseline-i', 64)]: withCpu(30_000, 0.96),
      [rowKey('introspect-cached', 64)]: withCpu(24_000, 0.97),
    }
    const lines = evaluateComparisons(rows, [64])
    expect(lines.map((l) => [l.path, l.against, l.unit])).toEqual([
      ['introspection, cached over its own work', 'baseline I', 'ratio'],
      ['introspection, cached over its own work', 'server CPU over baseline-i', 'us'],
      ["introspection, cached's own work (I)", 'baseline A', 'ratio'],
      ["introspection, cached's own work (I)", 'server CPU over baseline-a', 'us'],
      // Q was not run: its lines stay, with no number.
      ['introspection, cached over its answer as sent', 'baseline Q', 'ratio'],
      ['introspection, cached over its answer as sent', 'server CPU over baseline-q', 'us'],
    ])
    expect(lines.slice(4).every((l) => l.cells[0]!.value === null)).toBe(true)
    const [overI, serverOverI, iOverA, serverOverA] = lines.map((l) => l.cells[0]!.value!)
    expect(overI).toBeCloseTo(0.8)
    expect(serverOverI).toBeCloseTo(0.97e6 / 24_000 - 0.96e6 / 30_000)
    expect(iOverA).toBeCloseTo(0.6)
    expect(serverOverA).toBeCloseTo(0.96e6 / 30_000 - 0.95e6 / 50_000)
  })

  it('gives no number against a row that is not a measurement', () => {
    const broken = summarizeRuns([sample(3000, { errors: 5 })])
    const rows = {
      [rowKey('code-exchange', 16)]: broken,
      [rowKey('code-exchange-openid-rs256', 16)]: withServer(2400, 0.5),
    }
    const lines = evaluateComparisons(rows, [16])
    expect(lines.every((l) => l.cells[0]!.value === null)).toBe(true)
    expect(lines[0]!.cells[0]!.note).toBe('not measured')
  })

  it('compares UserInfo with the baselines and the token-info rows, and leaves out rows not run', () => {
    // (The lines of a row that was run stay, with no number, when what it is set against was not.)
    const rows = {
      [rowKey('baseline-a', 64)]: validRow(60_000),
      [rowKey('token-info-cached', 64)]: validRow(40_000),
      [rowKey('userinfo-cached', 64)]: validRow(12_000),
    }
    const lines = evaluateComparisons(rows, [64])
    expect(lines.map((l) => [l.path, l.against, l.cells[0]!.value])).toEqual([
      ['UserInfo, cached', 'baseline A', 0.2],
      ['UserInfo, cached', 'token-info-cached', 0.3],
      // Token info's own work (J) was not run: its lines say so rather than disappear.
      ['token info, cached over its own work', 'baseline J', null],
      ['token info, cached over its own work', 'server CPU over baseline-j', null],
      ['token info, cached over its answer as sent', 'baseline L', null],
      ['token info, cached over its answer as sent', 'server CPU over baseline-l', null],
    ])
  })

  it.each([
    ['introspection, cached', 'introspect-cached', 'I', 'Q'],
    ['token info, cached', 'token-info-cached', 'J', 'L'],
  ])(
    "sets %s against its answer as sent, and that answer against A: what the answer's headers leave of the target",
    (path, row, work, answer) => {
      const rows = {
        [rowKey('baseline-a', 16)]: validRow(40_000),
        [rowKey(`baseline-${work.toLowerCase()}`, 16)]: validRow(36_000),
        [rowKey(`baseline-${answer.toLowerCase()}`, 16)]: validRow(32_000),
        [rowKey(row, 16)]: validRow(28_000),
      }
      const lines = evaluateComparisons(rows, [16]).filter((l) => l.unit === 'ratio' && l.path.startsWith(path))
      expect(lines.map((l) => [l.path, l.against, l.cells[0]!.value])).toEqual([
        [`${path} over its own work`, `baseline ${work}`, 28 / 36],
        [`${path}'s own work (${work})`, 'baseline A', 0.9],
        [`${path} over its answer as sent`, `baseline ${answer}`, 28 / 32],
        [`${path}'s answer as sent (${answer})`, 'baseline A', 0.8],
      ])
    },
  )
})

describe('a comparison whose other row is missing', () => {
  it('gives no number, and says the row was not measured', () => {
    const row = validRow(900)
    const lines = evaluateComparisons({ [rowKey('code-exchange', 64)]: { ...row, cpu: { ...row.cpu, server: 0.3, db: 0.6 } } }, [64])
    expect(lines.map((l) => [l.path, l.against])).toEqual([
      ['code exchange over its statements', 'baseline E'],
      ['code exchange over its statements', 'server CPU over baseline-e'],
      ['code exchange over its statements', 'pg CPU over baseline-e'],
    ])
    expect(lines.map((l) => l.cells[0])).toEqual([
      { connections: 64, value: null, note: 'not measured' },
      { connections: 64, value: null, note: 'not measured' },
      { connections: 64, value: null, note: 'not measured' },
    ])
  })
})

describe('selectCaseIds', () => {
  const ids = ['baseline-c', 'code-exchange', 'code-exchange-openid-rs256', 'introspect-miss', 'baseline-n']
  const sorted = (s: Set<string>) => [...s].sort()

  it('selects every case without --only', () => {
    expect(sorted(selectCaseIds(ids, null))).toEqual([...ids].sort())
  })

  it('adds the rows a selected row is compared with, and only those', () => {
    expect(sorted(selectCaseIds(ids, ['introspect-miss']))).toEqual(['baseline-n', 'introspect-miss'])
    expect(sorted(selectCaseIds(ids, ['code-exchange-openid']))).toEqual(['baseline-c', 'code-exchange', 'code-exchange-openid-rs256'])
    expect(sorted(selectCaseIds(ids, ['baseline-c']))).toEqual(['baseline-c'])
  })

  it('adds the baseline and the ceiling a growth row runs beside (GROWTH_BESIDE)', () => {
    const growth = ['baseline-b', 'baseline-c', 'baseline-e', 'baseline-r', 'introspect-miss-growth', 'code-exchange-growth']
    expect(sorted(selectCaseIds(growth, ['introspect-miss-growth']))).toEqual(['baseline-b', 'baseline-r', 'introspect-miss-growth'])
    expect(sorted(selectCaseIds(growth, ['code-exchange-growth']))).toEqual(['baseline-c', 'baseline-e', 'code-exchange-growth'])
    expect(sorted(selectCaseIds(['introspect-miss-growth'], ['introspect']))).toEqual(['introspect-miss-growth'])
  })

  it('adds no compared row that is not among the cases', () => {
    expect(sorted(selectCaseIds(['code-exchange-openid-rs256'], ['code-exchange-openid']))).toEqual(['code-exchange-openid-rs256'])
  })
})
