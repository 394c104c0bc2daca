import { type Kysely, sql } from 'kysely'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { activityStatement } from '../../src/repositories/activity.js'
import type { Database } from '../../src/db/schema.js'
import { type TestDatabase, createTestDatabase } from '../helpers/db.js'
import { createApplication, createUser } from '../helpers/factories.js'

/*
 * The dashboard's statement (src/repositories/activity.ts) on tables with many rows, as a server
 * that has run for a year has them: most tokens revoked, events spread over the year. It reads
 * indexes only (the audit events' (event, occurred_at), the revocations', the live tokens'
 * partial one), never every row of access_tokens or audit_events. A server-only test: PGlite's
 * planner is PostgreSQL's, but the point is the plan on a server's table sizes.
 */
let db: TestDatabase
const NOW = new Date('2026-03-11T12:30:00Z')
const DAY_END = new Date('2026-03-12T00:00:00Z')

beforeAll(async () => {
  db = await createTestDatabase()
  const h = db.handle.db
  const user = await createUser(h)
  const application = await createApplication(h, { ownerId: user.id })
  // 200,000 tokens over the 365 days before NOW, one in twenty still live; 200,000 audit events.
  // Seeding is not what is measured: no statement timeout for it, on however busy a machine.
  await h.transaction().execute(async (trx) => {
    await sql`set local statement_timeout = 0`.execute(trx)
    await seed(trx, application.id, user.id)
  })
  await sql`vacuum analyze access_tokens`.execute(h)
  await sql`vacuum analyze audit_events`.execute(h)
})

async function seed(h: Kysely<Database>, applicationId: string, userId: string): Promise<void> {
  await sql`
    insert into access_tokens (token_hash, application_id, user_id, scopes, created_at, revoked_at)
    select md5(i::text) || md5((-i)::text), ${applicationId}::uuid, ${userId}::uuid, array['read'],
           ${NOW}::timestamptz - (i * interval '157 seconds'),
           case when i % 20 = 0 then null else ${NOW}::timestamptz - (i * interval '157 seconds') + interval '1 hour' end
    from generate_series(1, 200000) as i`.execute(h)
  await sql`
    insert into audit_events (occurred_at, event, user_id, actor_id, client_id, application_name, client_address, detail)
    select ${NOW}::timestamptz - (i * interval '157 seconds'),
           (array['user.logged_in', 'user.login_failed', 'application.created', 'grant.given', 'user.logged_out'])[1 + i % 5],
           null, null, null, null, null, ''
    from generate_series(1, 200000) as i`.execute(h)
}
afterAll(async () => {
  await db?.destroy()
})

it('counts the week from indexes, without reading every token or event', async () => {
  const statement = activityStatement({
    events: ['user.logged_in', 'user.login_failed', 'application.created'],
    start: new Date(DAY_END.getTime() - 7 * 86_400_000),
    end: DAY_END,
  })
  const { rows } = await sql<{ 'QUERY PLAN': string }>`explain ${statement}`.execute(db.handle.db)
  const plan = rows.map((r) => r['QUERY PLAN']).join('\n')
  expect(plan).not.toMatch(/Seq Scan on (access_tokens|audit_events)/)
  for (const index of ['audit_events_event_idx', 'access_tokens_revoked_at_idx', 'access_tokens_live_grant_idx']) {
    expect(plan, plan).toContain(index)
  }
  // And what it counts is right on this many rows: a token every 157 s, an event of each kind every 785 s.
  const counted = await statement.execute(db.handle.db)
  const total = (what: string) => counted.rows.filter((r) => r.what === what).reduce((n, r) => n + Number(r.n), 0)
  const issuedSince = (seconds: number) => Math.floor(seconds / 157)
  const weekUntilNow = (NOW.getTime() - (DAY_END.getTime() - 7 * 86_400_000)) / 1000
  expect(total('token.issued')).toBe(issuedSince(weekUntilNow))
  expect(total('user.logged_in')).toBe(Math.floor(issuedSince(weekUntilNow) / 5))
})
