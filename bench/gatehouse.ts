import { execFile, execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { type Child, freePort, spawnPinned, waitForHttp } from './proc.js'

/* Gatehouse as a user runs it: the built server, `node dist/src/server.js`, configured by env. */

const ROOT = fileURLToPath(new URL('..', import.meta.url))
/** BENCH_SERVER_ENTRY runs the harness against another server script (e.g. to test the harness itself). */
export const SERVER_ENTRY = process.env.BENCH_SERVER_ENTRY ?? fileURLToPath(new URL('../dist/src/server.js', import.meta.url))
export const VERIFIER_ENTRY = fileURLToPath(new URL('../packages/verifier/dist/index.js', import.meta.url))

/** `npm run build`; on failure the error text (the caller decides whether an older dist will do). */
export async function build(): Promise<string | null> {
  try {
    await promisify(execFile)('npm', ['run', 'build'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 })
    return null
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string }
    return `${e.stdout ?? ''}${e.stderr ?? ''}`.trim() || e.message
  }
}

/**
 * The commit the benchmark measures, as its results page names it (docs/performance.md "Result
 * files"), and whether the work tree differs from it; null outside a git checkout.
 */
export function sourceCommit(): { commit: string; uncommittedChanges: boolean } | null {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  try {
    return { commit: git('rev-parse', '--short', 'HEAD'), uncommittedChanges: git('status', '--porcelain', '--untracked-files=no') !== '' }
  } catch {
    return null
  }
}

/**
 * SECRET_KEY of every Gatehouse this process starts: with PostgreSQL Gatehouse does not start
 * without one (docs/operating/configuration.md). One key per
 * benchmark process, since the signing keys a server creates are sealed under it in the database
 * the next server of the run (bench:instructions --processes) opens.
 */
const BENCH_SECRET_KEY = randomBytes(32).toString('hex')

export const builtServerExists = (): boolean => existsSync(SERVER_ENTRY)

export interface RunningServer {
  child: Child
  origin: string
}

export interface GatehouseOptions {
  cpu: number
  databaseUrl: string
  /** Extra environment, e.g. TOKEN_CACHE_MAX_ENTRIES for the growth server. */
  env?: Record<string, string>
  /** Directory for a V8 CPU profile (`--cpu-prof`), written when the server stops. */
  cpuProfDir?: string
  name?: string
  /** A program the server runs under, with its arguments (bench/instructions.ts: valgrind). */
  under?: readonly string[]
  /** Node options before the script (bench/instructions.ts: `--single-threaded`). */
  nodeOptions?: readonly string[]
  readyTimeoutMs?: number
}

export async function startGatehouse(opts: GatehouseOptions): Promise<RunningServer> {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const nodeArgs = [...(opts.nodeOptions ?? []), ...(opts.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', opts.cpuProfDir] : [])]
  const [command = process.execPath, ...args] = [...(opts.under ?? []), process.execPath, ...nodeArgs, SERVER_ENTRY]
  const child = spawnPinned(opts.name ?? 'gatehouse', command, args, {
    cpu: opts.cpu,
    cwd: ROOT,
    env: {
      NODE_ENV: 'production',
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_URL: origin,
      DATABASE_URL: opts.databaseUrl,
      LOG_LEVEL: 'warn',
      SECRET_KEY: BENCH_SECRET_KEY,
      ...opts.env,
    },
  })
  try {
    await waitForHttp(child, `${origin}/readyz`, opts.readyTimeoutMs)
  } catch (err) {
    await child.stop()
    throw err
  }
  return { child, origin }
}
