import { execFile } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { DataDirInUseError, lockDataDir } from '../../src/db/data-dir-lock.js'
import { staleBuild as staleBuildUnder } from '../../scripts/build-if-stale.mjs'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** Why dist/ cannot be used as it is, or undefined when it is current (the rule `npm start` uses). */
export function staleBuild(): string | undefined {
  return staleBuildUnder(ROOT)
}

/**
 * Held while one process builds. The data directory's lock (src/db/data-dir-lock.ts) does what
 * is needed: one holder at a time, named by its pid, and taken over once that process is gone,
 * so a run stopped mid-build blocks no later one.
 */
const LOCK_DIR = join(ROOT, 'node_modules/.cache/gatehouse-test/build')

/**
 * Runs `npm run build` unless dist/ is newer than every source, so tests that start the built
 * server (`node dist/src/server.js`) never run yesterday's code. .ci/run builds before the
 * tests, so there this costs one directory walk. Test files of two workers may ask at once:
 * one builds while the other waits for it, instead of two compilers writing one dist/.
 */
export async function ensureBuilt(): Promise<void> {
  if (staleBuild() === undefined) return
  mkdirSync(LOCK_DIR, { recursive: true })
  let unlock: () => void
  for (;;) {
    try {
      unlock = lockDataDir(LOCK_DIR)
      break
    } catch (err) {
      if (!(err instanceof DataDirInUseError)) throw err
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
  }
  try {
    await build()
  } finally {
    unlock()
  }
}

/** `npm run build`, unless another process built dist/ while this one waited. */
async function build(): Promise<void> {
  const reason = staleBuild()
  if (reason === undefined) return
  console.log(`building dist/ (${reason}): npm run build`)
  try {
    await promisify(execFile)('npm', ['run', 'build'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 })
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string }
    throw new Error(`npm run build failed:\n${`${e.stdout ?? ''}${e.stderr ?? ''}`.trim() || e.message}`)
  }
  const still = staleBuild()
  if (still !== undefined) throw new Error(`npm run build left dist/ stale: ${still}`)
}
