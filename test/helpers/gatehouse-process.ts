import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { type AddressInfo, createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { TEST_SECRET_KEY } from './secret-key.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** What `npm start` runs: the build, with plain node (test/helpers/build.ts keeps it current). */
export const BUILT_SERVER = fileURLToPath(new URL('../../dist/src/server.js', import.meta.url))

/** A port nobody listens on right now (the OS picks it; PORT=0 would not tell us which). */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

export interface ProcessExit {
  code: number | null
  signal: NodeJS.Signals | null
}

export interface GatehouseProcess {
  readonly url: string
  readonly pid: number
  /** What the process printed, stdout and stderr interleaved, for failure messages. */
  output(): string
  /** What it printed on stdout alone: its JSON log lines. */
  stdout(): string
  /** Whether the process has not exited (yet). */
  running(): boolean
  /** Settles once the process has ended. */
  readonly exited: Promise<ProcessExit>
  /** SIGTERM, then the exit code once the process has ended. */
  stop(): Promise<number | null>
  /** Sends `signal` (SIGKILL by default: no shutdown of any kind) and settles once the process has ended. */
  kill(signal?: NodeJS.Signals): Promise<ProcessExit>
}

export interface StartOptions {
  /**
   * Run the built server, `node dist/src/server.js`, as `npm start` and the Dockerfile do,
   * instead of src/server.ts through tsx as `npm run dev` does.
   */
  built?: boolean
  /**
   * How long to wait for /healthz, default 60 s: a safety net that names the failure (a start takes
   * a few seconds, more on a loaded machine, which may slow the start but must not fail it).
   */
  timeoutMs?: number
  /** Node's own options before the script, e.g. V8's tracing flags. */
  nodeArgs?: readonly string[]
  /** The port to listen on (default: a free one), for an environment that names its own PUBLIC_URL. */
  port?: number
}

/**
 * With PostgreSQL, SECRET_KEY is required (src/lib/secret-key.ts): the tests' key, unless `env`
 * sets its own (`SECRET_KEY: ''` leaves it unset). The embedded database keeps its key file.
 */
function withSecretKey(env: Record<string, string>): Record<string, string> {
  return env.DATABASE_URL === undefined ? env : { SECRET_KEY: TEST_SECRET_KEY, ...env }
}

/** A Gatehouse process on its own port; resolves once /healthz answers. */
export async function startGatehouse(env: Record<string, string>, options: StartOptions = {}): Promise<GatehouseProcess> {
  const port = options.port ?? (await freePort())
  const args = [
    ...(options.nodeArgs ?? []),
    ...(options.built ? [BUILT_SERVER] : ['--conditions=source', '--import', 'tsx', 'src/server.ts']),
  ]
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', ...withSecretKey(env) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  let stdout = ''
  child.stdout!.on('data', (d: Buffer) => {
    const text = d.toString()
    output += text
    stdout += text
  })
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()))
  // 'close', not 'exit': by then every byte the process wrote has been read.
  const exited = new Promise<ProcessExit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })))
  const url = `http://127.0.0.1:${port}`
  const timeoutMs = options.timeoutMs ?? 60_000
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await exited
      throw new Error(`Gatehouse exited (${child.exitCode ?? child.signalCode}):\n${output}`)
    }
    try {
      if ((await fetch(`${url}/healthz`)).ok) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`Gatehouse did not start within ${timeoutMs} ms:\n${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const running = () => child.exitCode === null && child.signalCode === null
  return {
    url,
    pid: child.pid!,
    output: () => output,
    stdout: () => stdout,
    running,
    exited,
    async stop() {
      if (running()) child.kill('SIGTERM')
      return (await exited).code
    },
    async kill(signal = 'SIGKILL') {
      if (running()) child.kill(signal)
      return exited
    },
  }
}

/**
 * `count` Gatehouse processes, started side by side as a deployment's are. When one fails to
 * start, the ones that did are stopped before the error is thrown: a file's afterAll never sees
 * them, and they would otherwise outlive the test run.
 */
export async function startGatehouses(count: number, env: Record<string, string>, options: StartOptions = {}): Promise<GatehouseProcess[]> {
  const starts = await Promise.allSettled(Array.from({ length: count }, () => startGatehouse(env, options)))
  const started = starts.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []))
  const failed = starts.find((s): s is PromiseRejectedResult => s.status === 'rejected')
  if (failed) {
    await Promise.all(started.map((p) => p.stop()))
    throw failed.reason
  }
  return started
}

/** The built command line, `node dist/src/cli.js …`, as the Docker image runs it. */
export const BUILT_CLI = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url))

/** Runs the built `gatehouse` once with `env` (and PATH) as its whole environment; its exit code and output. */
export function runBuiltCli(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BUILT_CLI, ...args],
      { env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...withSecretKey(env) } },
      (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr })
      },
    )
  })
}
