import { sql } from 'kysely'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createDatabase, type DatabaseHandle } from '../../src/db/connect.js'
import { QUOTAS } from '../../src/limits/policy.js'
import { insertPushedRequest } from '../../src/repositories/pushed-requests.js'
import { type TestDatabase, createTestDatabase } from '../helpers/db.js'
import { createApplication, createUser, holdConsentRequest } from '../helpers/factories.js'

/*
 * Holding a consent request drops the user's oldest beyond QUOTAS.pendingPerUser, and pushing a
 * request (RFC 9126) the application's oldest beyond its cap, in the statement that inserts.
 * Concurrent statements of one user, or of one busy client, each deleting the surplus it read,
 * waited on rows another was deleting, each holding rows the other wanted next: PostgreSQL
 * broke the cycle after deadlock_timeout by failing one, a 500 (`npm run bench`'s consent row at
 * 64 connections, 2026-11-26). The trim now takes only rows no other transaction holds, so it
 * never waits and no cycle can form. The cycle needs two deleters' orders to cross, which a test
 * cannot make happen on demand; its first half can be: a row of the surplus held by another
 * transaction, which the trim used to wait for (here until the statement timeout) and now
 * leaves to that transaction. PGlite has one connection: a server-only test.
 */
const STATEMENT_TIMEOUT_MS = 2000

let testDb: TestDatabase
let trimming: DatabaseHandle
beforeAll(async () => {
  testDb = await createTestDatabase()
  trimming = await createDatabase({ url: testDb.url!, pool: { max: 2, statementTimeoutMs: STATEMENT_TIMEOUT_MS } })
})
afterAll(async () => {
  await trimming?.close()
  await testDb?.destroy()
})

/** Runs `insert` while another transaction holds the oldest row `table` has for `owner`. */
async function whileOldestHeld(
  table: 'pending_authorizations' | 'pushed_authorization_requests',
  owner: string,
  insert: () => Promise<unknown>,
) {
  const column = table === 'pending_authorizations' ? 'user_id' : 'application_id'
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let held!: () => void
  const holding = new Promise<void>((resolve) => (held = resolve))
  const holder = testDb.handle.db.transaction().execute(async (trx) => {
    await sql`select id from ${sql.table(table)} where ${sql.ref(column)} = ${owner} order by created_at limit 1 for update`.execute(trx)
    held()
    await released
  })
  await holding
  try {
    return await insert()
  } finally {
    release()
    await holder
  }
}

it("holds a consent request while another transaction holds one of the user's surplus requests, then trims to the cap", async () => {
  const user = await createUser(testDb.handle.db)
  const app = await createApplication(testDb.handle.db)
  const keep = QUOTAS.pendingPerUser.max
  let t0 = Date.parse('2026-11-26T12:00:00Z')
  const hold = () => holdConsentRequest(trimming.db, { userId: user.id, applicationId: app.id, now: new Date(t0++) })
  for (let i = 0; i < keep + 1; i++) await hold()
  const during = await whileOldestHeld('pending_authorizations', user.id, hold)
  const last = await hold()
  const kept = await testDb.handle.db.selectFrom('pending_authorizations').select('id').where('user_id', '=', user.id).execute()
  expect(kept).toHaveLength(keep)
  expect(kept.map((r) => r.id)).toEqual(expect.arrayContaining([during, last]))
})

it("stores a pushed request while another transaction holds one of the client's surplus requests, then trims to the cap", async () => {
  const app = await createApplication(testDb.handle.db)
  const keep = 12
  let n = 0
  let t0 = Date.parse('2026-11-26T12:00:00Z')
  const push = () => {
    const now = new Date(t0++)
    return insertPushedRequest(trimming.db, {
      requestUriHash: `hash-${n++}`,
      applicationId: app.id,
      params: { response_type: 'code' },
      now,
      expiresAt: new Date(now.getTime() + 60_000),
      keepPerApplication: keep,
    })
  }
  for (let i = 0; i < keep + 1; i++) await push()
  await whileOldestHeld('pushed_authorization_requests', app.id, push)
  await push()
  const kept = await testDb.handle.db
    .selectFrom('pushed_authorization_requests')
    .select('id')
    .where('application_id', '=', app.id)
    .execute()
  expect(kept).toHaveLength(keep)
})
