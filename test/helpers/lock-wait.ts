import { sql } from 'kysely'
import type { Db } from '../../src/db/connect.js'

/**
 * Waits (a bounded number of event-loop turns) until some backend of this database waits on a
 * lock: how a test holds a transaction open exactly until the request it started is blocked.
 */
export async function untilBlockedOnLock(db: Db): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`.execute(db)
    if (rows[0]!.n > 0) return
    await new Promise((resolve) => setImmediate(resolve))
  }
}
