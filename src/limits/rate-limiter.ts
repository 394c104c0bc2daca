import type { Db } from '../db/connect.js'
import { releaseRateLimits, reserveRateLimit } from '../repositories/rate-limits.js'
import type { Clock } from '../lib/clock.js'

/*
 * The one rate limiter: fixed windows counted in the database (docs/operating/limits.md), so
 * every process enforces the same limit. The rules come from src/limits/policy.ts (rateRule).
 */

export interface SlotRule {
  readonly key: string
  readonly limit: number
  readonly windowMs: number
}

export type SlotDecision =
  | {
      readonly allowed: true
      /** The keys a slot was taken under: give them back (releaseSlots) if the attempt turns out not to count. */
      readonly taken: readonly string[]
      /** Rules whose last slot this attempt took: the next attempt under them is refused. */
      readonly filled: readonly SlotRule[]
    }
  | { readonly allowed: false; readonly refused: SlotRule; readonly retryAfterSeconds: number }

/**
 * Takes a slot under each rule in order, and stops at the first that is full: a refused attempt
 * counts under nothing (the slots taken before it are given back), so a key that already refuses
 * cannot be used to push the others (OWASP Authentication Cheat Sheet, "Login Throttling").
 */
export async function takeSlots(db: Db, clock: Clock, rules: readonly SlotRule[]): Promise<SlotDecision> {
  const now = clock()
  const taken: string[] = []
  const filled: SlotRule[] = []
  for (const rule of rules) {
    const result = await reserveRateLimit(db, rule.key, rule.limit, now, rule.windowMs)
    if (!result.taken) {
      await releaseRateLimits(db, taken)
      const retryAfterSeconds = Math.max(1, Math.ceil((result.windowStart.getTime() + rule.windowMs - now.getTime()) / 1000))
      return { allowed: false, refused: rule, retryAfterSeconds }
    }
    taken.push(rule.key)
    if (result.count >= rule.limit) filled.push(rule)
  }
  return { allowed: true, taken, filled }
}

/** Gives back the slots of an attempt that does not count (a successful log-in). */
export async function releaseSlots(db: Db, keys: readonly string[]): Promise<void> {
  await releaseRateLimits(db, keys)
}
