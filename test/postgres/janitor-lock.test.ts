import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { type DatabaseHandle, createDatabase } from '../../src/db/connect.js'
import { manualClock } from '../../src/lib/clock.js'
import { Janitor } from '../../src/limits/janitor.js'
import { type TestDatabase, createTestDatabase } from '../helpers/db.js'
import { createUser } from '../helpers/factories.js'

/*
 * Two janitors on two handles of one PostgreSQL database, as in two processes: while one
 * runs (held here in the middle of its run by a row lock the test takes), the other does
 * nothing; once it is done, the other runs. PGlite lives in one process: a server-only test.
 */

let testDb: TestDatabase
let handles: DatabaseHandle[]
beforeAll(async () => {
  testDb = await createTestDatabase()
  handles = [await createDatabase({ url: testDb.url!, pool: { max: 3 } }), await createDatabase({ url: testDb.url!, pool: { max: 3 } })]
})
afterAll(async () => {
  for (const h of handles) await h.close()
  await testDb.destroy()
})

const janitorOn = (database: DatabaseHandle) =>
  new Janitor({
    database,
    clock: manualClock(new Date('2026-05-01T00:00:00Z')),
    log: { info: () => {}, warn: () => {} },
    intervalMs: 300_000,
    revokedTokenRetentionMs: 30 * 86_400_000,
    auditRetentionMs: 90 * 86_400_000,
    metadataClientUnusedMs: 30 * 86_400_000,
  })

it('never runs two janitors at once', async () => {
  const db = testDb.handle.db
  const user = await createUser(db)
  const old = new Date('2026-04-01T00:00:00Z')
  await db
    .insertInto('sessions')
    .values(
      Array.from({ length: 10 }, () => ({ id_hash: randomBytes(32).toString('hex'), user_id: user.id, created_at: old, expires_at: old })),
    )
    .execute()
  const [a, b] = [janitorOn(handles[0]!), janitorOn(handles[1]!)]

  let runA: Promise<{ ran: boolean }> | undefined
  await db.transaction().execute(async (trx) => {
    // One expired session locked by someone else: A's run waits on it, holding the janitor lock.
    await sql`select id_hash from sessions for update`.execute(trx)
    runA = a.runOnce()
    for (let i = 0; i < 1000; i++) {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(db)
      if (rows[0]!.n > 0) break
      await new Promise((resolve) => setImmediate(resolve))
    }
    // A is in the middle of its run: B finds the lock taken and does nothing.
    expect(await b.runOnce()).toMatchObject({ ran: false, removed: { sessions: 0 } })
  })
  expect(await runA).toMatchObject({ ran: true, removed: { sessions: 10 } })
  // A is done: the lock is free again for B.
  expect(await b.runOnce()).toMatchObject({ ran: true })
  const left = await db
    .selectFrom('sessions')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow()
  expect(Number(left.n)).toBe(0)
})
