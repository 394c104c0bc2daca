import { beforeEach, describe, expect, it } from 'vitest'
import { type NewAuditEvent, insertAuditEvent, listAuditEvents } from '../../../src/repositories/audit-events.js'
import { JANITOR_TABLES } from '../../../src/repositories/janitor.js'
import { auditEventOf } from '../../helpers/audit.js'
import { createUser } from '../../helpers/factories.js'
import { appWithUsersTestFile } from '../../helpers/file-set-up.js'

/*
 * The janitor's AUDIT_RETENTION_DAYS (src/limits/janitor.ts), with the injected clock: nothing sleeps.
 */

const DAY = 86_400_000
const START = new Date('2026-04-01T00:00:00Z').getTime()

const { t, alice } = appWithUsersTestFile({ alice: 'alice@example.com' }, { AUDIT_RETENTION_DAYS: '30' })

const event = (fields: Partial<NewAuditEvent> & { occurredAt: Date }) => auditEventOf(alice, fields)

describe('retention (AUDIT_RETENTION_DAYS)', () => {
  beforeEach(async () => {
    await t.db.deleteFrom('audit_events').execute()
  })

  it('the janitor deletes events older than the retention, and only those, 1,000 a statement', async () => {
    const now = START + 100 * DAY
    t.clock.set(new Date(now))
    const rows = (day: number, n: number) =>
      t.db
        .insertInto('audit_events')
        .values(
          Array.from({ length: n }, () => ({
            occurred_at: new Date(now - day * DAY),
            event: 'user.logged_in',
            user_id: alice.id,
            actor_id: alice.id,
            detail: '',
          })),
        )
        .execute()
    await rows(31, 1500)
    await rows(30.5, 700)
    await rows(29, 5)
    await rows(0, 5)
    const queries = t.queries.count
    const { removed } = await t.deps.janitor.runOnce()
    expect(removed.audit_events).toBe(2200)
    // 1,000 + 1,000 + 200 for audit_events, one statement for each of the other tables,
    // and on PostgreSQL the advisory lock.
    expect(t.queries.count - queries).toBe(3 + (JANITOR_TABLES.length - 1) + (t.deps.database.kind === 'postgres' ? 1 : 0))
    const left = await t.db.selectFrom('audit_events').select('occurred_at').execute()
    expect(left).toHaveLength(10)
    expect(left.every((r) => r.occurred_at.getTime() > now - 30 * DAY)).toBe(true)

    // A day later the 29-day-old ones are 30 days old and still kept until they pass it.
    t.clock.advance(DAY)
    await t.deps.janitor.runOnce()
    expect(await t.db.selectFrom('audit_events').select('id').execute()).toHaveLength(10)
    t.clock.advance(DAY)
    await t.deps.janitor.runOnce()
    expect(await t.db.selectFrom('audit_events').select('id').execute()).toHaveLength(5)

    const metrics = await t.app.inject('/metrics')
    expect(metrics.body).toMatch(/^gatehouse_janitor_rows_removed_total\{table="audit_events"\} 2205$/m)
  })

  it('keeps the events of a deleted account (without the account) until the retention ends', async () => {
    const doomed = await createUser(t.db)
    await insertAuditEvent(t.db, event({ occurredAt: t.clock(), userId: doomed.id, actorId: doomed.id }))
    await t.db.deleteFrom('users').where('id', '=', doomed.id).execute()
    const [row] = await listAuditEvents(t.db, { limit: 10 })
    expect(row).toMatchObject({ event: 'user.logged_in', user_id: null, actor_id: null, client_address: '192.0.2.1' })
  })
})
