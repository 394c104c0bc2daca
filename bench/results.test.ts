import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { machineKind, writeResult } from './results.js'

describe('machineKind', () => {
  it('labels the CPU models of the committed runs, without trademarks or filler words', () => {
    expect(machineKind({ cpuModel: 'AMD EPYC', cpus: 2 }, '')).toBe('amd-epyc-2cpu')
    expect(machineKind({ cpuModel: 'Intel(R) Xeon(R) Processor', cpus: 2 }, '')).toBe('intel-xeon-2cpu')
    expect(machineKind({ cpuModel: 'AMD EPYC 7B13 64-Core Processor', cpus: 4 }, '')).toBe('amd-epyc-7b13-4cpu')
    expect(machineKind({ cpuModel: 'Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz', cpus: 8 }, '')).toBe('intel-core-i7-8650u-8cpu')
  })

  it('takes an override, and names an unreadable machine rather than failing', () => {
    expect(machineKind({ cpuModel: 'AMD EPYC', cpus: 2 }, 'CI runner / large')).toBe('ci-runner-large')
    expect(machineKind({}, '')).toBe('unknown-cpu')
  })
})

describe('writeResult', () => {
  let dir: string
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-results-'))
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  const put = (name: string, data: unknown) => writeFileSync(join(dir, name), JSON.stringify(data))
  const amd = { cpuModel: 'AMD EPYC', cpus: 2 }
  const xeon = { cpuModel: 'Intel(R) Xeon(R) Processor', cpus: 2 }

  it('keeps one complete run per family and machine kind: the new one replaces the earlier of its kind only', () => {
    put('2026-11-28T00-00-00Z.json', { machine: amd })
    put('2026-11-29T00-00-00Z.json', { machine: { ...xeon, kind: 'intel-xeon-2cpu' } })
    put('instructions-2026-11-28T00-00-00Z.json', { machine: { ...amd, kind: 'amd-epyc-2cpu' } })
    const written = writeResult(dir, {
      family: 'bench',
      name: '2026-12-01T00-00-00Z',
      kind: 'amd-epyc-2cpu',
      complete: true,
      data: { machine: amd },
    })
    expect(written.file).toBe(join(dir, '2026-12-01T00-00-00Z.json'))
    expect(written.replaced).toEqual([join(dir, '2026-11-28T00-00-00Z.json')])
    expect(readdirSync(dir).sort()).toEqual([
      '2026-11-29T00-00-00Z.json',
      '2026-12-01T00-00-00Z.json',
      'instructions-2026-11-28T00-00-00Z.json',
    ])
  })

  it('puts any other run in scratch/ and removes nothing', () => {
    put('2026-11-28T00-00-00Z.json', { machine: amd })
    const written = writeResult(dir, {
      family: 'bench',
      name: '2026-12-01T00-00-00Z-quick',
      kind: 'amd-epyc-2cpu',
      complete: false,
      data: {},
    })
    expect(written).toEqual({ file: join(dir, 'scratch', '2026-12-01T00-00-00Z-quick.json'), replaced: [] })
    expect(readdirSync(dir).sort()).toEqual(['2026-11-28T00-00-00Z.json', 'scratch'])
  })

  it('leaves files it cannot read as a run, and other files, alone', () => {
    put('notes.json', 'not a run')
    writeFileSync(join(dir, 'CPU.1.cpuprofile'), '{}')
    mkdirSync(join(dir, 'scratch'))
    put('scratch/2026-11-28T00-00-00Z.json', { machine: amd })
    writeResult(dir, { family: 'bench', name: 'new', kind: 'amd-epyc-2cpu', complete: true, data: {} })
    expect(readdirSync(dir).sort()).toEqual(['CPU.1.cpuprofile', 'new.json', 'notes.json', 'scratch'])
    expect(readdirSync(join(dir, 'scratch'))).toEqual(['2026-11-28T00-00-00Z.json'])
  })
})
