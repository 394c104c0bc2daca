import { sql } from 'kysely'
import type { Db } from '../db/connect.js'

/*
 * What the operator's dashboard counts (docs/operating/admin.md "The dashboard"), read from rows
 * Gatehouse keeps anyway: audit events, and the access tokens' created_at and revoked_at. Nothing
 * is written for it, so the token endpoints keep their one statement
 * (docs/decisions/007-one-statement-hot-paths.md).
 */

/** The two token series, beside the audit events' own names. */
export const TOKEN_ISSUED = 'token.issued'
export const TOKEN_REVOKED = 'token.revoked'

export interface ActivityWindow {
  /** Audit event names to count, each a series of its own. */
  events: readonly string[]
  /** Counted: start ≤ time < end. */
  start: Date
  end: Date
}

export interface ActivityCount {
  /** An audit event name, TOKEN_ISSUED or TOKEN_REVOKED. */
  what: string
  /** Which hour before `end`: 0 is [end - 1 h, end), 1 the hour before, and so on. */
  hoursAgo: number
  count: number
}

/**
 * Counts per series and hour in one statement; hours without any are left out. Hours are counted
 * back from `end` in seconds since the epoch, not with date_trunc, whose answer depends on the
 * session's time zone. Each hour holds its start and not its end, as the window does: a moment
 * exactly one hour before `end` starts hour 0 (hence ceil - 1; floor would put it in hour 1).
 *
 * Each part reads an index (test/postgres/activity-plan.test.ts): the events through
 * audit_events_event_idx (event, occurred_at); revocations through access_tokens_revoked_at_idx.
 * There is no index on created_at, and adding one would cost every token insert and revocation
 * one more index entry (docs/scaling.md "How many rows"). So the tokens issued are counted in two
 * parts: those revoked since — revoked at or after their issue, so within the revocations already
 * read — and the live ones, through the live tokens' partial index, access_tokens_live_grant_idx
 * (which holds created_at), whose size the per-grant quota bounds.
 */
export async function countActivity(db: Db, w: ActivityWindow): Promise<ActivityCount[]> {
  const { rows } = await activityStatement(w).execute(db)
  return rows.map((r) => ({ what: r.what, hoursAgo: Number(r.hours_ago), count: Number(r.n) }))
}

/** countActivity's statement, apart so that its plan can be checked (test/postgres/activity-plan.test.ts). */
export function activityStatement(w: ActivityWindow) {
  const events = w.events.length === 0 ? sql`null` : sql.join(w.events.map((e) => sql`${e}`))
  return sql<{ what: string; hours_ago: number; n: number }>`
    select what, ceil(extract(epoch from (${w.end}::timestamptz - at)) / 3600)::int - 1 as hours_ago, count(*)::int as n
    from (
      select event as what, occurred_at as at from audit_events
        where event in (${events}) and occurred_at >= ${w.start} and occurred_at < ${w.end}
      union all
      select ${TOKEN_ISSUED}::text, created_at from access_tokens
        where revoked_at is null and created_at >= ${w.start} and created_at < ${w.end}
      union all
      select v.what, v.at from access_tokens t
        cross join lateral (values (${TOKEN_ISSUED}::text, t.created_at), (${TOKEN_REVOKED}::text, t.revoked_at)) as v (what, at)
        where t.revoked_at >= ${w.start}
    ) as moments
    where at >= ${w.start}::timestamptz and at < ${w.end}::timestamptz
    group by 1, 2`
}
