import type { Db } from '../db/connect.js'

/**
 * Counts one attempt against `key` in a fixed window and returns the count so far. One
 * upsert, so concurrent attempts from several processes are counted exactly.
 */
export async function hitRateLimit(db: Db, key: string, now: Date, windowMs: number): Promise<{ count: number; windowStart: Date }> {
  const cutoff = new Date(now.getTime() - windowMs)
  const row = await db
    .insertInto('rate_limits')
    .values({ key, window_start: now, count: 1 })
    .onConflict((oc) =>
      oc.column('key').doUpdateSet((eb) => ({
        count: eb
          .case()
          .when('rate_limits.window_start', '<=', cutoff)
          .then(1)
          .else(eb('rate_limits.count', '+', 1))
          .end(),
        window_start: eb.case().when('rate_limits.window_start', '<=', cutoff).then(now).else(eb.ref('rate_limits.window_start')).end(),
      })),
    )
    .returning(['count', 'window_start'])
    .executeTakeFirstOrThrow()
  return { count: row.count, windowStart: row.window_start }
}
