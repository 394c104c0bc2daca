import type { ExpressionBuilder } from 'kysely'
import type { Db } from '../db/connect.js'
import type { Database } from '../db/schema.js'

/** One more attempt in the row's window, or the first of a new window once it has passed `cutoff`. */
function countedInWindow(eb: ExpressionBuilder<Database, 'rate_limits'>, cutoff: Date, now: Date) {
  const expired = eb('rate_limits.window_start', '<=', cutoff)
  return {
    count: eb
      .case()
      .when(expired)
      .then(1)
      .else(eb('rate_limits.count', '+', 1))
      .end(),
    window_start: eb.case().when(expired).then(now).else(eb.ref('rate_limits.window_start')).end(),
  }
}

/**
 * Takes one slot under `key` if fewer than `limit` are taken in the current window, in one
 * statement so concurrent attempts from several processes never take more than `limit`. A
 * refused attempt changes nothing (the ON CONFLICT ... WHERE leaves the row alone and returns
 * no row). Returns the count after taking, or the start of the full window when refused.
 */
export async function reserveRateLimit(
  db: Db,
  key: string,
  limit: number,
  now: Date,
  windowMs: number,
): Promise<{ taken: true; count: number } | { taken: false; windowStart: Date }> {
  const cutoff = new Date(now.getTime() - windowMs)
  const row = await db
    .insertInto('rate_limits')
    .values({ key, window_start: now, count: 1 })
    .onConflict((oc) =>
      oc
        .column('key')
        .doUpdateSet((eb) => countedInWindow(eb, cutoff, now))
        .where((eb) => eb.or([eb('rate_limits.window_start', '<=', cutoff), eb('rate_limits.count', '<', limit)])),
    )
    .returning(['count'])
    .executeTakeFirst()
  if (row) return { taken: true, count: row.count }
  const full = await db.selectFrom('rate_limits').select('window_start').where('key', '=', key).executeTakeFirst()
  return { taken: false, windowStart: full?.window_start ?? now }
}

/** Gives back one slot under each key: an attempt that turned out not to count. */
export async function releaseRateLimits(db: Db, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return
  await db
    .updateTable('rate_limits')
    .set((eb) => ({ count: eb.fn('greatest', [eb('count', '-', 1), eb.val(0)]) }))
    .where('key', 'in', keys)
    .execute()
}
