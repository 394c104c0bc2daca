import { rmSync } from 'node:fs'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createDatabase } from '../../src/db/connect.js'
import { type GatehouseProcess, startGatehouse } from '../helpers/gatehouse-process.js'
import { pgliteDataDir } from '../helpers/pglite-data-dir.js'
import { type FlowParty, exchange, forbidden, introspect, seedFlowParty, startLoad, tally, until } from '../helpers/oauth-load.js'

/*
 * docs/operating/backups-and-upgrades.md "Failures and recovery": the built server (`node dist/src/server.js`) on embedded PGlite, killed with
 * SIGKILL in the middle of writes (codes issued and consumed, tokens issued and revoked), then
 * started again on the same data directory. Whatever it acknowledged before dying holds.
 */

// A copy of a migrated data directory (test/helpers/pglite-data-dir.ts): what is under test is
// the restart after the kill, not initdb.
let dataDir: string
let env: Record<string, string>
let server: GatehouseProcess | undefined
beforeAll(async () => {
  dataDir = await pgliteDataDir('migrated', 'gatehouse-crash-')
  // One user and one client drive all the load: the per-(user, application) quotas (docs/operating/limits.md, tested in test/integration/quotas.test.ts) would refuse codes and revoke tokens.
  env = { DATA_DIR: dataDir, LOG_LEVEL: 'warn', CODE_ISSUE_LIMIT: '100000', MAX_TOKENS_PER_GRANT: '10000' }
})
afterAll(async () => {
  await server?.kill()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
})

it('kill -9 under write load loses no acknowledged token, revocation or consumed code', async () => {
  // PGlite is opened by one process at a time: seed, close, then start the server on it.
  let party: FlowParty
  {
    const handle = await createDatabase({ dataDir })
    try {
      party = await seedFlowParty(handle.db)
    } finally {
      await handle.close()
    }
  }

  server = await startGatehouse(env, { built: true })
  const first = server
  const load = startLoad([first.url], party, { loops: 4, introspect: false, revokeEvery: 3 })
  // The bound only names the failure: a loaded machine slows the load down but cannot fail the test.
  await until(
    () => (load.issued.length >= 60 && load.revoked.size >= 15) || load.running() === 0,
    60_000,
    `60 tokens and 15 revocations acknowledged (${load.issued.length}, ${load.revoked.size})`,
  )
  expect(load.running(), first.output()).toBe(4)
  expect(forbidden(load.replies), JSON.stringify(forbidden(load.replies).slice(0, 5))).toEqual([])
  // Mid-load: requests are on their way as the process dies.
  expect(load.inFlight()).toBeGreaterThan(0)
  const exit = await first.kill('SIGKILL')
  expect(exit.signal).toBe('SIGKILL')
  await load.stop()
  // What was acknowledged: answered before the kill, so it must survive it.
  const issued = [...load.issued]
  const revoked = new Set(load.revoked)
  const revocationSent = new Set(load.revocationSent)
  const cut = load.replies.filter((r) => r.status === 0).length
  console.log(`killed with ${JSON.stringify(tally(load.replies))}; ${cut} requests cut off`)

  const restarting = performance.now()
  server = await startGatehouse(env, { built: true })
  console.log(`restarted on the same data directory in ${(performance.now() - restarting).toFixed(0)} ms`)
  const again = server.url

  // Every acknowledged token is active, every acknowledged revocation holds; a revocation cut
  // off by the kill may have committed or not. (Before any replay below: replaying a code
  // revokes what it produced.)
  const wrong: string[] = []
  const undecided = issued.filter(({ token }) => revocationSent.has(token) && !revoked.has(token))
  expect(undecided.length).toBeLessThanOrEqual(4) // at most one per loop
  for (const { token } of issued) {
    if (undecided.some((u) => u.token === token)) continue
    const r = await introspect(again, party, token)
    const expected = !revoked.has(token)
    if (r.status !== 200 || r.active !== expected)
      wrong.push(`${token.slice(0, 12)}…: ${r.status} active=${r.active}, expected ${expected}`)
  }
  expect(wrong, `of ${issued.length - undecided.length} tokens`).toEqual([])

  // Every code acknowledged as exchanged is consumed: a replay is refused.
  for (const { code } of issued) {
    const r = await exchange(again, party, code)
    expect(r.status, r.body).toBe(400)
    expect(r.error).toBe('invalid_grant')
  }
  expect(await server.stop()).toBe(0)
}, 180_000)
