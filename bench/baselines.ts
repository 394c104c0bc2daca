import { fileURLToPath } from 'node:url'
import type { RunningServer } from './gatehouse.js'
import { freePort, spawnPinned, waitForHttp } from './proc.js'

/*
 * Baselines A–G (docs/performance.md): the bare Fastify server of bench/baseline-server.ts, started as its
 * own process on the server's CPU, against the same database and with the same pool size.
 * The routes are the BASELINE_CASES and statementCases of bench/cases.ts; their tables come from seed.ts.
 */

const ENTRY = fileURLToPath(new URL('./baseline-server.ts', import.meta.url))

/** Rows in bench_rows, read by primary key by baseline B. */
export const BASELINE_ROWS = 100_000

export interface BaselineOptions {
  cpu: number
  databaseUrl: string
  poolMax: number
  /** As for startGatehouse (bench/gatehouse.ts): a program to run under, Node options, a start-up limit. */
  under?: readonly string[]
  nodeOptions?: readonly string[]
  readyTimeoutMs?: number
}

export async function startBaselines(opts: BaselineOptions): Promise<RunningServer> {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const [command = process.execPath, ...args] = [
    ...(opts.under ?? []),
    process.execPath,
    ...(opts.nodeOptions ?? []),
    '--conditions=source',
    '--import',
    'tsx',
    ENTRY,
  ]
  const child = spawnPinned('baseline server', command, args, {
    cpu: opts.cpu,
    env: {
      NODE_ENV: 'production',
      PORT: String(port),
      DATABASE_URL: opts.databaseUrl,
      DATABASE_POOL_MAX: String(opts.poolMax),
      BASELINE_ROWS: String(BASELINE_ROWS),
    },
  })
  try {
    await waitForHttp(child, `${origin}/a`, opts.readyTimeoutMs)
  } catch (err) {
    await child.stop()
    throw err
  }
  return { child, origin }
}
