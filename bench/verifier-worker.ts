import { pathToFileURL } from 'node:url'

/*
 * Row 10: the verifier a resource API imports (`@gatehouse/verifier`, built to
 * packages/verifier/dist/index.js) in database mode with a warm cache: checks per second on one
 * core, no HTTP. Started pinned by bench/verifier.ts; reports over IPC.
 *
 * Two numbers: the path the Fastify plugin takes per request (verifyCached, falling back to
 * verify), which the target applies to, and verify() awaited, for reference.
 */

export interface VerifierReport {
  ok: boolean
  /** The plugin's path: verifyCached(), verify() only on a cache miss. */
  checksPerSecond?: number
  /** `await verify()` for every check. */
  asyncChecksPerSecond?: number
  error?: string
}

type VerifierModule = typeof import('@gatehouse/verifier')

const entry = process.env.VERIFIER_ENTRY!
const databaseUrl = process.env.DATABASE_URL!
const tokens: string[] = JSON.parse(process.env.BENCH_TOKENS ?? '[]')
const durationMs = (Number(process.env.BENCH_DURATION_S ?? '3') * 1000) / 2
const SCOPE = 'read'
const BATCH = 10_000

async function load(): Promise<VerifierModule> {
  try {
    return (await import(pathToFileURL(entry).href)) as VerifierModule
  } catch (err) {
    throw new Error(`verifier module not built (${entry}): ${(err as Error).message.split('\n')[0]}`)
  }
}

/** Runs `batch` (BATCH checks) until the duration is over; checks per second. */
async function rate(batch: () => unknown): Promise<number> {
  const start = performance.now()
  let n = 0
  let now = start
  while (now - start < durationMs) {
    await batch()
    n += BATCH
    now = performance.now()
  }
  return n / ((now - start) / 1000)
}

async function main(): Promise<VerifierReport> {
  if (tokens.length === 0) throw new Error('no tokens')
  const { createVerifier } = await load()
  const verifier = createVerifier({ mode: 'database', database: databaseUrl })
  try {
    await verifier.ready()
    const headers = tokens.map((t) => `Bearer ${t}`)
    for (const h of headers) {
      const r = await verifier.verify(h, SCOPE)
      if (!r.ok) throw new Error(`a seeded live token did not verify: ${r.description}`)
    }
    if ((await verifier.verify('Bearer gat_not-a-real-token', SCOPE)).ok) throw new Error('the verifier accepted a garbage token')

    let misses = 0
    const pluginPath = async () => {
      for (let i = 0; i < BATCH; i++) {
        const h = headers[i % headers.length]!
        const cached = verifier.verifyCached(h, SCOPE)
        if (cached === undefined) {
          misses++
          await verifier.verify(h, SCOPE)
        }
      }
    }
    const awaited = async () => {
      for (let i = 0; i < BATCH; i++) await verifier.verify(headers[i % headers.length]!, SCOPE)
    }
    await pluginPath()
    await awaited()
    misses = 0
    const checksPerSecond = await rate(pluginPath)
    const asyncChecksPerSecond = await rate(awaited)
    if (misses > tokens.length) throw new Error(`${misses} cache misses with a warm cache`)
    return { ok: true, checksPerSecond, asyncChecksPerSecond }
  } finally {
    await verifier.close()
  }
}

main().then(
  (report) => {
    process.send?.(report)
    process.exit(0)
  },
  (err: unknown) => {
    process.send?.({ ok: false, error: err instanceof Error ? err.message : String(err) } satisfies VerifierReport)
    process.exit(0)
  },
)
