import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'

/*
 * Per-process CPU accounting from /proc: utime + stime of a process (all its threads) before
 * and after a run, divided by the wall time, is that process's share of one core. With the
 * server pinned to one core and the load generator to the other, a load share near 1 means
 * the load generator set the pace, not the server.
 */

const run = promisify(execFile)

/** Clock ticks per second for /proc/<pid>/stat; 100 on every Linux this runs on. */
let clockTicks = 100
try {
  clockTicks = Number((await run('getconf', ['CLK_TCK'])).stdout.trim()) || 100
} catch {
  // keep the Linux default
}

/** CPU seconds used so far by a process, or null when it is gone. */
export function cpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name, which is in parentheses and may itself contain spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after "(comm) ".
    return (Number(fields[11]) + Number(fields[12])) / clockTicks
  } catch {
    return null
  }
}

/** Peak resident set size (VmHWM) in bytes, or null when the process is gone. */
export function peakRssBytes(pid: number): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(status)
    return m ? Number(m[1]) * 1024 : null
  } catch {
    return null
  }
}

export interface CpuMark {
  at: number
  seconds: Map<number, number>
  /** Busy seconds per CPU (everything but idle and iowait), from /proc/stat. */
  cores: Map<number, number>
}

function coreBusySeconds(): Map<number, number> {
  const cores = new Map<number, number>()
  try {
    for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
      const m = /^cpu(\d+) (.*)$/.exec(line)
      if (!m) continue
      const [user, nice, system, , , irq, softirq, steal] = m[2]!.trim().split(/\s+/).map(Number)
      const busy = user! + nice! + system! + irq! + softirq! + steal!
      cores.set(Number(m[1]), busy / clockTicks)
    }
  } catch {
    // not Linux: no per-core figures
  }
  return cores
}

/** Reads the CPU time of every pid (pids that are gone are left out) and of every core. */
export function markCpu(pids: readonly number[]): CpuMark {
  const seconds = new Map<number, number>()
  for (const pid of pids) {
    const s = cpuSeconds(pid)
    if (s !== null) seconds.set(pid, s)
  }
  return { at: performance.now(), seconds, cores: coreBusySeconds() }
}

/** Busy share of one CPU between two marks, whoever used it. */
export function coreShare(before: CpuMark, after: CpuMark, cpu: number): number | null {
  const wall = (after.at - before.at) / 1000
  const a = before.cores.get(cpu)
  const b = after.cores.get(cpu)
  return wall > 0 && a !== undefined && b !== undefined ? (b - a) / wall : null
}

/**
 * Share of one core used by the group of `pids` between two marks. Processes present at only
 * one mark (a pooled connection opened or closed mid-run) count from the start mark as 0.
 */
export function cpuShare(before: CpuMark, after: CpuMark, pids: readonly number[]): number | null {
  const wall = (after.at - before.at) / 1000
  if (wall <= 0) return null
  let used = 0
  let seen = false
  for (const pid of pids) {
    const end = after.seconds.get(pid)
    if (end === undefined) continue
    seen = true
    used += end - (before.seconds.get(pid) ?? end)
  }
  return seen ? used / wall : null
}

/**
 * Pins running processes to one CPU (`taskset -p -c`); returns the pids that could be pinned.
 * `allThreads` moves every thread of each process (`-a`): without it only the main thread moves,
 * and a Node process's compiler, collector and libuv threads stay where they were.
 */
export async function pinPids(pids: readonly number[], cpu: number, allThreads = false): Promise<number[]> {
  const pinned: number[] = []
  await Promise.all(
    pids.map(async (pid) => {
      try {
        await run('taskset', [...(allThreads ? ['-a'] : []), '-p', '-c', String(cpu), String(pid)])
        pinned.push(pid)
      } catch {
        // gone already, or not ours to pin: its CPU is still counted
      }
    }),
  )
  return pinned
}

/** The command prefix that starts a program pinned to one CPU. */
export function pinnedCommand(cpu: number, command: string, args: readonly string[]): [string, string[]] {
  return ['taskset', ['-c', String(cpu), command, ...args]]
}
