import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { callgrindTotal, NO_VALGRIND, valgrindVersion } from './callgrind.js'
import { build } from './gatehouse.js'

/*
 * `npm run bench:guard-cost` (README "Instructions per request", docs/scaling.md "The read
 * paths' ceilings"): what the in-process verifier's cached check is made of, in machine
 * instructions per call under valgrind's callgrind, so that K's distance from A (README "Performance": a
 * guarded route at 0.95 × A) can be set against what the check cannot do without. Each piece
 * runs on a fresh `Authorization` header string per call, as the HTTP parser makes one per
 * request, in a plain Node process on the built package (no TypeScript loader to count), run
 * twice with different numbers of calls: the difference over the difference in calls is the cost
 * per call, the process's start-up and the cache's fill cancelled out.
 */

const PIECES = ['header', 'bearer', 'digest', 'peek'] as const
type Piece = (typeof PIECES)[number]

const SHARED = new URL('../packages/verifier/dist/shared.js', import.meta.url).href

/** The child: `calls` calls of one piece, each on a header string of its own. */
const CHILD = `
import { randomBytes } from 'node:crypto'
import { bearerToken, formatAccessToken, sha256Hex, TokenCache } from ${JSON.stringify(SHARED)}
const [piece, calls] = [process.argv[1], Number(process.argv[2])]
const tokens = Array.from({ length: 10 }, () => formatAccessToken(randomBytes(32).toString('base64url').slice(0, 43)))
const cache = new TokenCache({
  maxEntries: 100, ttlMs: 60000, negativeTtlMs: 5000, now: () => 0, wrap: (token) => ({ token }),
  lookup: async () => ({ userId: 'u', clientId: 'c', applicationId: null, username: null, scopes: ['read'], issuedAt: 0 }),
})
for (const t of tokens) await cache.check(t)
const work = (header) => {
  if (piece === 'header') return header.length
  const token = bearerToken(header)
  if (piece === 'bearer') return token.length
  if (piece === 'digest') return sha256Hex(token).length
  return cache.peek(token) ? 1 : 0
}
let sink = 0
// Concatenated at run time, so that each call gets a string of its own.
for (let i = 0; i < calls; i++) sink += work('Bearer ' + tokens[i % 10] + (i < 0 ? ' ' : ''))
if (piece === 'peek' && sink !== calls) throw new Error('peek missed ' + (calls - sink) + ' cached tokens')
`

function instructions(piece: Piece, calls: number, outDir: string): number {
  const file = join(outDir, `${piece}.${calls}`)
  execFileSync(
    'valgrind',
    [
      '-q',
      '--tool=callgrind',
      `--callgrind-out-file=${file}`,
      process.execPath,
      '--single-threaded',
      '--input-type=module',
      '-e',
      CHILD,
      piece,
      String(calls),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  )
  return callgrindTotal(file)
}

if (!valgrindVersion()) {
  console.error(NO_VALGRIND)
  process.exit(2)
}
const failure = await build()
if (failure) throw new Error(`npm run build failed:\n${failure}`)
const outDir = mkdtempSync(join(tmpdir(), 'gatehouse-guard-cost-'))
try {
  const [few, many] = [100_000, 300_000]
  const perCall = new Map<Piece, number>()
  for (const piece of PIECES) {
    perCall.set(piece, (instructions(piece, many, outDir) - instructions(piece, few, outDir)) / (many - few))
  }
  const cost = (piece: Piece) => perCall.get(piece)!
  const rows: [string, number][] = [
    ['the token out of the header (bearerToken)', cost('bearer') - cost('header')],
    ["the token's hex SHA-256 (sha256Hex: Node's one-shot crypto.hash)", cost('digest') - cost('bearer')],
    ["the cache's lookup of the digest (the rest of TokenCache.peek)", cost('peek') - cost('digest')],
    ['the whole cached check (bearerToken and TokenCache.peek)', cost('peek') - cost('header')],
  ]
  console.log('| part of the cached check | instructions per call |')
  console.log('|---|---:|')
  for (const [what, n] of rows) console.log(`| ${what} | ${Math.round(n).toLocaleString('en')} |`)
} finally {
  rmSync(outDir, { recursive: true, force: true })
}
