import { mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/*
 * Where result files go (docs/performance.md "Result files"). bench/results/ holds the latest
 * complete run of each family (`npm run bench`, `npm run bench:instructions`) per machine kind,
 * and nothing else: a complete run replaces the earlier one of its family and kind there, and
 * git history keeps the rest. Every other run (`--quick`, `--only`, `--cpu-prof`, a count that failed)
 * goes to bench/results/scratch/, which git ignores.
 */

export const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url))

export type ResultFamily = 'bench' | 'instructions'

export interface MachineLabel {
  cpuModel?: unknown
  cpus?: unknown
}

/**
 * The machine kind a run was made on, as a file-name-safe label: the CPU model without
 * trademarks and filler words, and the number of CPUs ('amd-epyc-2cpu', 'intel-xeon-2cpu').
 * BENCH_MACHINE_KIND overrides it where two kinds share a CPU model string.
 */
export function machineKind(machine: MachineLabel, override = process.env.BENCH_MACHINE_KIND): string {
  if (override) return slug(override)
  if (typeof machine.cpuModel !== 'string') return 'unknown-cpu'
  const words = machine.cpuModel
    .replace(/\((r|tm)\)/gi, ' ')
    .replace(/\b(processor|cpu|\d+-core)\b/gi, ' ')
    .replace(/@.*$/, ' ')
  const cpus = typeof machine.cpus === 'number' ? `-${machine.cpus}cpu` : ''
  return `${slug(words) || 'unknown-cpu'}${cpus}`
}

const slug = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')

/** This machine's CPU model and count, as a report's `machine` records them. */
export const thisMachine = (): Required<MachineLabel> => ({ cpuModel: os.cpus()[0]?.model, cpus: os.availableParallelism() })

const familyOf = (file: string): ResultFamily => (file.startsWith('instructions-') ? 'instructions' : 'bench')

/** The kind of the run a committed result file holds, or null when it cannot be read as one. */
function kindOfFile(path: string): string | null {
  try {
    const data = JSON.parse(readFileSync(path, 'utf8')) as { machine?: MachineLabel & { kind?: unknown } }
    if (!data.machine) return null
    return typeof data.machine.kind === 'string' ? data.machine.kind : machineKind(data.machine, '')
  } catch {
    return null
  }
}

export interface WrittenResult {
  file: string
  /** Earlier files of the same family and machine kind that this one replaced. */
  replaced: string[]
}

/**
 * Writes `data` as `<name>.json`: a complete run into `dir`, replacing the earlier complete run
 * of `family` on machine kind `kind` there; any other run into `dir`/scratch/.
 */
export function writeResult(
  dir: string,
  opts: { family: ResultFamily; name: string; kind: string; complete: boolean; data: unknown },
): WrittenResult {
  const target = opts.complete ? dir : join(dir, 'scratch')
  mkdirSync(target, { recursive: true })
  const file = join(target, `${opts.name}.json`)
  const replaced: string[] = []
  if (opts.complete) {
    for (const other of readdirSync(dir)) {
      const path = join(dir, other)
      if (!other.endsWith('.json') || path === file || familyOf(other) !== opts.family) continue
      if (kindOfFile(path) !== opts.kind) continue
      unlinkSync(path)
      replaced.push(path)
    }
  }
  writeFileSync(file, JSON.stringify(opts.data, null, 2) + '\n')
  return { file, replaced }
}
