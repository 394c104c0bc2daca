import type { Db } from '../db/connect.js'
import { hitRateLimit } from '../repositories/rate-limits.js'
import type { Clock } from '../lib/clock.js'

export const RATE_WINDOW_MS = 15 * 60_000

export interface RateDecision {
  allowed: boolean
  /** Seconds until the window resets, for Retry-After. */
  retryAfterSeconds: number
}

/** Counts an attempt under each key; refused when any key is over `limit` in the window. */
export async function consumeAttempt(
  db: Db,
  clock: Clock,
  keys: readonly string[],
  limit: number,
  windowMs = RATE_WINDOW_MS,
): Promise<RateDecision> {
  const now = clock()
  let worst: RateDecision = { allowed: true, retryAfterSeconds: 0 }
  for (const key of keys) {
    const { count, windowStart } = await hitRateLimit(db, key, now, windowMs)
    if (count > limit) {
      const retry = Math.max(1, Math.ceil((windowStart.getTime() + windowMs - now.getTime()) / 1000))
      if (worst.allowed || retry > worst.retryAfterSeconds) worst = { allowed: false, retryAfterSeconds: retry }
    }
  }
  return worst
}
