import { type ChildProcess, spawn, type StdioOptions } from 'node:child_process'
import { createServer } from 'node:net'
import { pinnedCommand } from './cpu.js'

/* Child processes of the benchmark: each pinned to one CPU, each stopped by its own pid. */

export interface Child {
  readonly name: string
  readonly process: ChildProcess
  readonly pid: number
  /** The last lines the process wrote to stdout/stderr, for error messages. */
  output(): string
  exited(): boolean
  stop(): Promise<void>
}

export interface SpawnOptions {
  cpu: number
  env?: Record<string, string | undefined>
  ipc?: boolean
  cwd?: string
}

/** Starts `command args` under `taskset -c <cpu>`; taskset execs the command, so the pid is the program's. */
export function spawnPinned(name: string, command: string, args: readonly string[], opts: SpawnOptions): Child {
  const [cmd, argv] = pinnedCommand(opts.cpu, command, args)
  const stdio: StdioOptions = opts.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe']
  const child = spawn(cmd, argv, { stdio, env: { ...process.env, ...opts.env }, cwd: opts.cwd })
  if (child.pid === undefined) throw new Error(`${name}: could not start ${command}`)
  let tail = ''
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-4000)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  let done = false
  const exit = new Promise<void>((resolve) => {
    child.once('exit', () => {
      done = true
      resolve()
    })
  })
  return {
    name,
    process: child,
    pid: child.pid,
    output: () => tail.trim(),
    exited: () => done,
    async stop() {
      if (done) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await exit
      clearTimeout(timer)
    },
  }
}

/** A free TCP port on 127.0.0.1 (closed again before returning, so a child can listen on it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address()
      const port = typeof addr === 'object' && addr ? addr.port : 0
      srv.close(() => resolve(port))
    })
  })
}

/** Polls `url` until it answers 2xx; throws with the child's output if it exits or times out. */
export async function waitForHttp(child: Child, url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (child.exited()) throw new Error(`${child.name} exited during start-up:\n${child.output()}`)
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) })
      await res.arrayBuffer()
      if (res.ok) return
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${child.name} did not answer ${url} within ${timeoutMs} ms:\n${child.output()}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}
