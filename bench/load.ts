import { fileURLToPath } from 'node:url'
import { type Child, spawnPinned } from './proc.js'
import type { RawRun } from './stats.js'

/*
 * The parent's handle on the load generator (bench/load-worker.ts): one long-lived process,
 * pinned with `taskset -c <cpu>`, so its CPU share can be read from /proc like the server's.
 */

export interface LoadSpec {
  /** http://127.0.0.1:<port> */
  origin: string
  method: 'GET' | 'POST'
  /** Path, header values and body may hold `{item}`, replaced by the next pool item per request. */
  path: string
  headers: Record<string, string>
  body?: string
  /**
   * One item per line; `offset` is where this run starts. `cycle` reuses items on purpose;
   * otherwise running out of items ends the run early, flagged `poolExhausted`.
   */
  pool?: { file: string; offset: number; cycle: boolean }
  connections: number
  durationS: number
  /** Unmeasured warm-up before the run: `warmupS` seconds if > 0, else `warmupRequests` requests. */
  warmupS: number
  warmupRequests: number
  check?: { bodyIncludes?: string; header?: { name: string; includes: string } }
}

export type WorkerRequest = { type: 'prepare'; id: number; spec: LoadSpec } | { type: 'run'; id: number }

export type WorkerReply =
  | { type: 'ready'; id: 0 }
  | { type: 'prepared'; id: number; used: number; exhausted: boolean }
  | { type: 'result'; id: number; raw: RawRun; used: number }
  | { type: 'error'; id: number; message: string }

const WORKER = fileURLToPath(new URL('./load-worker.ts', import.meta.url))

export class LoadGenerator {
  private nextId = 1
  private waiting = new Map<number, { resolve: (r: WorkerReply) => void; reject: (e: Error) => void }>()

  private constructor(readonly child: Child) {
    child.process.on('message', (msg: WorkerReply) => {
      const w = this.waiting.get(msg.id)
      if (!w) return
      this.waiting.delete(msg.id)
      if (msg.type === 'error') w.reject(new Error(msg.message))
      else w.resolve(msg)
    })
    child.process.once('exit', () => {
      for (const w of this.waiting.values()) w.reject(new Error(`load generator exited:\n${child.output()}`))
      this.waiting.clear()
    })
  }

  static async start(cpu: number): Promise<LoadGenerator> {
    const child = spawnPinned('load generator', process.execPath, ['--conditions=source', '--import', 'tsx', WORKER], { cpu, ipc: true })
    const gen = new LoadGenerator(child)
    await new Promise<void>((resolve, reject) => {
      gen.waiting.set(0, { resolve: () => resolve(), reject })
    })
    return gen
  }

  get pid(): number {
    return this.child.pid
  }

  private call(req: WorkerRequest): Promise<WorkerReply> {
    return new Promise((resolve, reject) => {
      this.waiting.set(req.id, { resolve, reject })
      this.child.process.send(req)
    })
  }

  /** Loads the pool and runs the unmeasured warm-up; reports the pool items it used. */
  async prepare(spec: LoadSpec): Promise<{ used: number; exhausted: boolean }> {
    const reply = await this.call({ type: 'prepare', id: this.nextId++, spec })
    if (reply.type !== 'prepared') throw new Error(`unexpected reply ${reply.type}`)
    return { used: reply.used, exhausted: reply.exhausted }
  }

  /** The measured run of the last prepared spec. */
  async run(): Promise<{ raw: RawRun; used: number }> {
    const reply = await this.call({ type: 'run', id: this.nextId++ })
    if (reply.type !== 'result') throw new Error(`unexpected reply ${reply.type}`)
    return { raw: reply.raw, used: reply.used }
  }

  stop(): Promise<void> {
    return this.child.stop()
  }
}
