import { randomBytes, randomUUID } from 'node:crypto'
import { pathToFileURL } from 'node:url'
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose'
import pg from 'pg'

/*
 * Row 10: the verifier a resource API imports (`@gatehouse/verifier`, built to
 * packages/verifier/dist/index.js) in database mode with a warm cache: checks per second on one
 * core, no HTTP. Started pinned by bench/verifier.ts; reports over IPC.
 *
 * Two numbers: the path the Fastify plugin takes per request (verifyCached, falling back to
 * verify), which the target applies to, and verify() awaited, for reference.
 *
 * Then DPoP (RFC 9449 §7.1, docs/performance.md "DPoP at a resource server"): one cached token
 * bound to a key, each request with a fresh proof (made beforehand: signing is the client's
 * work), through verifyRequest as the adapters call it; beside it the same request-level path
 * for one cached bearer token, and the ceiling, checkDpopProof alone on the same proofs.
 */

export interface VerifierReport {
  ok: boolean
  /** The plugin's path: verifyCached(), verify() only on a cache miss. */
  checksPerSecond?: number
  /** `await verify()` for every check. */
  asyncChecksPerSecond?: number
  /** verifyRequestCached for one cached bearer token (the adapters' path, no proof). */
  bearerRequestsPerSecond?: number
  /** verifyRequest for one cached bound token, a fresh proof each time. */
  dpopRequestsPerSecond?: number
  /** checkDpopProof alone on the same proofs: the ceiling of the DPoP row. */
  proofChecksPerSecond?: number
  error?: string
}

type VerifierModule = typeof import('@gatehouse/verifier')
type SharedModule = typeof import('@gatehouse/verifier/shared')

const entry = process.env.VERIFIER_ENTRY!
const databaseUrl = process.env.DATABASE_URL!
const tokens: string[] = JSON.parse(process.env.BENCH_TOKENS ?? '[]')
const durationMs = (Number(process.env.BENCH_DURATION_S ?? '3') * 1000) / 2
const SCOPE = 'read'
const BENCH_RESOURCE = 'https://api.example.test'
const BENCH_ISSUER = 'https://auth.example.test'
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
  // With a resource, as an API that checks audiences runs it (RFC 8707): the seeded tokens have
  // none, so the rows show what that check costs such tokens (docs/performance.md).
  const verifier = createVerifier({ mode: 'database', database: databaseUrl, resource: BENCH_RESOURCE, issuer: BENCH_ISSUER })
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
    return { ok: true, checksPerSecond, asyncChecksPerSecond, ...(await dpopRows(verifier)) }
  } finally {
    await verifier.close()
  }
}

const DPOP_URL = 'https://api.example.test/things'
/** Proofs made per timed part: more than one part's checks, so that none is ever replayed. */
const PROOFS = 8000
const WARM_PROOFS = 500
const DPOP_BATCH = 1000

/** A copy of the first seeded token, bound to a fresh key: its token and the key's proofs. */
async function boundCopy(shared: SharedModule) {
  const { publicKey, privateKey } = await generateKeyPair('ES256')
  const jwk = await exportJWK(publicKey)
  const token = shared.formatAccessToken(randomBytes(32).toString('base64url'))
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    await client.query(
      `insert into access_tokens (token_hash, application_id, user_id, scopes, created_at, dpop_jkt)
       select $1, application_id, user_id, scopes, now(), $2 from access_tokens where token_hash = $3`,
      [shared.sha256Hex(token), await calculateJwkThumbprint(jwk, 'sha256'), shared.sha256Hex(tokens[0]!)],
    )
  } finally {
    await client.end()
  }
  const ath = shared.accessTokenHash(token)
  const iat = Math.floor(Date.now() / 1000)
  const proofs: string[] = []
  for (let i = 0; i < PROOFS; i++) {
    const claims = { htm: 'GET', htu: DPOP_URL, iat, jti: randomUUID(), ath }
    proofs.push(await new SignJWT(claims).setProtectedHeader({ typ: 'dpop+jwt', alg: 'ES256', jwk }).sign(privateKey))
  }
  return { token, proofs }
}

/** Per second, over about `durationMs`, of `check` run on proofs in turn: each proof is used once. */
async function proofRate(proofs: readonly string[], check: (proof: string) => Promise<unknown>): Promise<number> {
  const start = performance.now()
  let n = 0
  while (performance.now() - start < durationMs && n + DPOP_BATCH <= proofs.length) {
    for (let i = 0; i < DPOP_BATCH; i++) await check(proofs[n + i]!)
    n += DPOP_BATCH
  }
  return n / ((performance.now() - start) / 1000)
}

async function dpopRows(verifier: import('@gatehouse/verifier').Verifier): Promise<Partial<VerifierReport>> {
  const shared = (await import(pathToFileURL(entry.replace(/index\.js$/, 'shared.js')).href)) as SharedModule
  const { token, proofs } = await boundCopy(shared)
  const dpop = (proof: string) => ({ authorization: `DPoP ${token}`, dpop: proof, method: 'GET', url: DPOP_URL })
  const accept = async (proof: string) => {
    const result = await verifier.verifyRequest(dpop(proof), SCOPE)
    if (!result.ok) throw new Error(`a fresh proof was refused: ${result.description}`)
  }
  const checkAlone = (proof: string) =>
    shared.checkDpopProof(proof, { method: 'GET', url: DPOP_URL, accessToken: token, now: Math.floor(Date.now() / 1000) })
  // Both paths warmed first, so that neither is timed while V8 still compiles jose's code.
  for (const proof of proofs.slice(0, WARM_PROOFS)) await accept(proof)
  for (const proof of proofs.slice(WARM_PROOFS, 2 * WARM_PROOFS)) await checkAlone(proof)
  const rest = proofs.slice(2 * WARM_PROOFS)
  const half = rest.length / 2
  const bearer = `Bearer ${tokens[0]}`
  const bearerRequestsPerSecond = await rate(() => {
    for (let i = 0; i < BATCH; i++) verifier.verifyRequestCached(bearer, undefined, SCOPE)
  })
  const dpopRequestsPerSecond = await proofRate(rest.slice(0, half), accept)
  const proofChecksPerSecond = await proofRate(rest.slice(half), checkAlone)
  return { bearerRequestsPerSecond, dpopRequestsPerSecond, proofChecksPerSecond }
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
