import type { Db } from '../db/connect.js'
import type { Clock } from '../lib/clock.js'
import { TOKEN_ISSUED, TOKEN_REVOKED, countActivity } from '../repositories/activity.js'

/*
 * The operator's dashboard (docs/operating/admin.md "The dashboard"): what happened in the last 24
 * hours, hour by hour, and in the last 7 days, day by day, counted from the audit log and the
 * token table. Hours and days are UTC ones, the current one included while it runs.
 */

/** Each series and where it is counted from: an audit event (src/audit/audit-log.ts) or the token table. */
export const ACTIVITY_SOURCES = {
  signIns: 'user.logged_in',
  failedLogIns: 'user.login_failed',
  tokensIssued: TOKEN_ISSUED,
  tokensRevoked: TOKEN_REVOKED,
  newApplications: 'application.created',
} as const

export type ActivityKey = keyof typeof ACTIVITY_SOURCES
export const ACTIVITY_KEYS = Object.freeze(Object.keys(ACTIVITY_SOURCES) as ActivityKey[])

export interface ActivityPeriod {
  /** Where each bucket starts, oldest first; each lasts `bucketMs`. */
  starts: Date[]
  bucketMs: number
  /** Per series, a count per bucket, in the order of `starts`. */
  counts: Record<ActivityKey, number[]>
}

export interface Activity {
  /** The moment the counts were read (they are kept ACTIVITY_CACHE_MS). */
  countedAt: Date
  /** The 24 hours up to the end of the current hour. */
  hours: ActivityPeriod
  /** The 7 days up to the end of the current day. */
  days: ActivityPeriod
}

const HOUR = 3_600_000
const DAY = 24 * HOUR

/**
 * How long a process keeps the counts it read. The statement reads every event and revocation of
 * the week and every live token (src/repositories/activity.ts): cheap next to what the server
 * does in a minute, but not for each of several operators' page loads. A minute is recent enough
 * for hour-wide bars.
 */
export const ACTIVITY_CACHE_MS = 60_000

function emptyPeriod(starts: Date[], bucketMs: number): ActivityPeriod {
  const counts = Object.fromEntries(ACTIVITY_KEYS.map((k) => [k, starts.map(() => 0)])) as Record<ActivityKey, number[]>
  return { starts, bucketMs, counts }
}

/** Reads the counts as of `now`, in one statement. */
export async function readActivity(db: Db, now: Date): Promise<Activity> {
  const hourEnd = Math.floor(now.getTime() / HOUR) * HOUR + HOUR
  const dayEnd = Math.floor(now.getTime() / DAY) * DAY + DAY
  // The statement counts hours back from the end of the day; the last 24 hours end earlier.
  const hoursAfter = (dayEnd - hourEnd) / HOUR
  const hours = emptyPeriod(
    Array.from({ length: 24 }, (_, i) => new Date(hourEnd - (24 - i) * HOUR)),
    HOUR,
  )
  const days = emptyPeriod(
    Array.from({ length: 7 }, (_, i) => new Date(dayEnd - (7 - i) * DAY)),
    DAY,
  )
  const keyOf = new Map(ACTIVITY_KEYS.map((k) => [ACTIVITY_SOURCES[k] as string, k]))
  const events = ACTIVITY_KEYS.map((k) => ACTIVITY_SOURCES[k]).filter((s) => s !== TOKEN_ISSUED && s !== TOKEN_REVOKED)
  const rows = await countActivity(db, { events, start: new Date(dayEnd - 7 * DAY), end: new Date(dayEnd) })
  for (const { what, hoursAgo, count } of rows) {
    const key = keyOf.get(what)
    if (key === undefined || hoursAgo < 0 || hoursAgo >= 7 * 24) continue
    days.counts[key][6 - Math.floor(hoursAgo / 24)]! += count
    const hour = 23 - (hoursAgo - hoursAfter)
    if (hour >= 0 && hour < 24) hours.counts[key][hour]! += count
  }
  return { countedAt: now, hours, days }
}

/**
 * The counts, read at most once per ACTIVITY_CACHE_MS by this process (by the injected clock);
 * page loads meanwhile, concurrent ones included, share the one read. A failed read is not kept.
 */
export function cachedActivity(db: Db, clock: Clock): () => Promise<Activity> {
  let last: { at: number; value: Promise<Activity> } | undefined
  return () => {
    const now = clock()
    const age = last === undefined ? -1 : now.getTime() - last.at
    if (last !== undefined && age >= 0 && age < ACTIVITY_CACHE_MS) return last.value
    const entry = { at: now.getTime(), value: readActivity(db, now) }
    last = entry
    entry.value.catch(() => {
      if (last === entry) last = undefined
    })
    return entry.value
  }
}
