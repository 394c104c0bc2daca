import { sql } from 'kysely'
import type { Db } from '../../src/db/connect.js'

/** Polls of pg_stat_activity before the wait is called off: seconds on a loaded machine, no clock read. */
const MAX_POLLS = 5000

/** The PostgreSQL backend running `trx`: what a test passes as `holder` once it holds a lock there. */
export async function backendPid(trx: Db): Promise<number> {
  const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)
  return rows[0]!.pid
}

/**
 * Waits until some backend of this database waits on a lock held by backend `holder`, and
 * returns the waiting backend's pid: how a race test holds a transaction open exactly until
 * the work it started is blocked behind it. Throws, so the test fails rather than pass without
 * its race, when `work` settles before it is seen waiting (it never needed the lock) or when
 * no such wait shows within MAX_POLLS polls (each one a round trip that yields to I/O).
 */
export async function untilBlockedOnLock(db: Db, holder: number, work: Promise<unknown>): Promise<number> {
  let settled = false
  // Also marks a rejection as handled: the test awaits `work` itself afterwards.
  work.then(
    () => (settled = true),
    () => (settled = true),
  )
  for (let i = 0; i < MAX_POLLS; i++) {
    const { rows } = await sql<{ pid: number }>`
      select pid from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and ${holder}::int = any(pg_blocking_pids(pid))`.execute(db)
    if (rows[0] !== undefined) return rows[0].pid
    if (settled) throw new Error(`The awaited work finished without waiting on a lock of backend ${holder}: the race was not staged.`)
    await new Promise((resolve) => setImmediate(resolve))
  }
  throw new Error(`No backend waited on a lock of backend ${holder} within ${MAX_POLLS} polls: the race was not staged.`)
}

/**
 * Stages a race behind a row lock the test holds: in a transaction of the test's own, `lock` takes
 * the lock, `first` is started and seen waiting on it, then `second` is started and seen waiting
 * behind `first` (untilBlockedOnLock, which fails the test when either never waits). The
 * transaction then commits, and both are returned still running, for the test to await.
 */
export async function stageRaceBehindLock<First, Second>(
  db: Db,
  lock: (trx: Db) => Promise<unknown>,
  first: () => Promise<First>,
  second: () => Promise<Second>,
): Promise<{ first: Promise<First>; second: Promise<Second> }> {
  return db.transaction().execute(async (trx) => {
    await lock(trx)
    const firstRun = first()
    const firstWaiting = await untilBlockedOnLock(db, await backendPid(trx), firstRun)
    const secondRun = second()
    await untilBlockedOnLock(db, firstWaiting, secondRun)
    // Wrapped: returning the promises themselves would make the commit wait for them.
    return { first: firstRun, second: secondRun }
  })
}
