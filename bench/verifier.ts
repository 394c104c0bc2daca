import { fileURLToPath } from 'node:url'
import { VERIFIER_ENTRY } from './gatehouse.js'
import { spawnPinned } from './proc.js'
import type { VerifierReport } from './verifier-worker.js'

const WORKER = fileURLToPath(new URL('./verifier-worker.ts', import.meta.url))

/**
 * Runs row 10 in its own process on `cpu`; never throws, failures come back in the report. The
 * DPoP rows' proofs are signed before they are timed, which takes the extra minute at most.
 */
export async function measureVerifier(opts: {
  cpu: number
  databaseUrl: string
  tokens: readonly string[]
  durationS: number
}): Promise<VerifierReport> {
  const child = spawnPinned('verifier', process.execPath, ['--conditions=source', '--import', 'tsx', WORKER], {
    cpu: opts.cpu,
    ipc: true,
    env: {
      NODE_ENV: 'production',
      VERIFIER_ENTRY,
      DATABASE_URL: opts.databaseUrl,
      BENCH_TOKENS: JSON.stringify(opts.tokens),
      BENCH_DURATION_S: String(opts.durationS),
    },
  })
  const report = await new Promise<VerifierReport>((resolve) => {
    const timer = setTimeout(() => resolve({ ok: false, error: 'verifier run timed out' }), (opts.durationS + 90) * 1000)
    child.process.once('message', (msg: VerifierReport) => {
      clearTimeout(timer)
      resolve(msg)
    })
    child.process.once('exit', () => {
      clearTimeout(timer)
      resolve({ ok: false, error: `verifier process exited without a report:\n${child.output()}` })
    })
  })
  await child.stop()
  return report
}
