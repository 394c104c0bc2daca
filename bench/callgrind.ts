import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

/*
 * What bench:instructions needs of valgrind's callgrind (docs/performance.md "Instructions per request").
 */

/** valgrind's version, or null when it is not installed. */
export function valgrindVersion(): string | null {
  try {
    return execFileSync('valgrind', ['--version'], { encoding: 'utf8' }).trim()
  } catch {
    return null
  }
}

export const NO_VALGRIND = 'valgrind is not installed (Debian: apt-get install valgrind); nothing was measured'

/** The instructions a callgrind dump counted in all. */
export function callgrindTotal(file: string): number {
  const totals = /^totals:\s+(\d+)/m.exec(readFileSync(file, 'utf8'))
  if (!totals) throw new Error(`no totals in ${file}`)
  return Number(totals[1])
}
