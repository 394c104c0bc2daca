import { beforeAll, describe, expect, it } from 'vitest'
import { type AuditEventRow, type NewAuditEvent, insertAuditEvent, listAuditEvents } from '../../../src/repositories/audit-events.js'
import { formatAuditCursor, readSecurityLog } from '../../../src/audit/audit-pages.js'
import { auditEventOf } from '../../helpers/audit.js'
import { createUser } from '../../helpers/factories.js'
import { appWithUsersTestFile } from '../../helpers/file-set-up.js'

/*
 * The audit log's repository (src/repositories/audit-events.ts): the filters the operator's view
 * will use, and keyset pages, as the Security log reads them.
 */

const DAY = 86_400_000
const START = new Date('2026-04-01T00:00:00Z').getTime()

const { t, alice, bob } = appWithUsersTestFile({ alice: 'alice@example.com', bob: 'bob@example.com' })

const event = (fields: Partial<NewAuditEvent> & { occurredAt: Date }) => auditEventOf(alice, fields)

const at = (day: number, minute = 0) => new Date(START + day * DAY + minute * 60_000)
const summary = (rows: AuditEventRow[]) => rows.map((r) => `${r.event}@${r.occurred_at.toISOString().slice(5, 16)}`)

describe('listing audit events', () => {
  beforeAll(async () => {
    await t.db.deleteFrom('audit_events').execute()
    await insertAuditEvent(t.db, event({ occurredAt: at(0), event: 'user.signed_up' }))
    await insertAuditEvent(t.db, event({ occurredAt: at(1), event: 'user.login_failed', actorId: null }))
    await insertAuditEvent(t.db, event({ occurredAt: at(1, 1) }))
    await insertAuditEvent(
      t.db,
      event({ occurredAt: at(2), event: 'application.created', clientId: 'client-a', applicationName: 'Planner', detail: 'Scopes: read' }),
    )
    await insertAuditEvent(t.db, event({ occurredAt: at(2), event: 'user.login_failed', userId: null, actorId: null }))
    await insertAuditEvent(t.db, event({ occurredAt: at(3), event: 'grant.given', userId: bob.id, actorId: bob.id, clientId: 'client-a' }))
    await insertAuditEvent(t.db, event({ occurredAt: at(4), event: 'user.logged_in', userId: bob.id, actorId: bob.id }))
  })

  it('lists every event newest first, equal times by insertion, with the emails of the account and the actor', async () => {
    const rows = await listAuditEvents(t.db, { limit: 100 })
    expect(summary(rows)).toEqual([
      'user.logged_in@04-05T00:00',
      'grant.given@04-04T00:00',
      'user.login_failed@04-03T00:00',
      'application.created@04-03T00:00',
      'user.logged_in@04-02T00:01',
      'user.login_failed@04-02T00:00',
      'user.signed_up@04-01T00:00',
    ])
    expect(rows[3]).toMatchObject({
      user_id: alice.id,
      user_email: 'alice@example.com',
      actor_email: 'alice@example.com',
      client_id: 'client-a',
      application_name: 'Planner',
      client_address: '192.0.2.1',
      detail: 'Scopes: read',
    })
    expect(rows[2]).toMatchObject({ user_id: null, user_email: null, actor_id: null, actor_email: null })
    expect(rows[0]!.id).toMatch(/^\d+$/)
  })

  it('filters by event type, account, actor, client_id and time range, all together if asked', async () => {
    expect(summary(await listAuditEvents(t.db, { events: ['user.login_failed'], limit: 100 }))).toEqual([
      'user.login_failed@04-03T00:00',
      'user.login_failed@04-02T00:00',
    ])
    expect(summary(await listAuditEvents(t.db, { events: ['grant.given', 'application.created'], limit: 100 }))).toEqual([
      'grant.given@04-04T00:00',
      'application.created@04-03T00:00',
    ])
    expect(await listAuditEvents(t.db, { events: [], limit: 100 })).toEqual([])
    expect(summary(await listAuditEvents(t.db, { userId: bob.id, limit: 100 }))).toEqual([
      'user.logged_in@04-05T00:00',
      'grant.given@04-04T00:00',
    ])
    expect(await listAuditEvents(t.db, { actorId: alice.id, limit: 100 })).toHaveLength(3)
    expect(summary(await listAuditEvents(t.db, { clientId: 'client-a', limit: 100 }))).toEqual([
      'grant.given@04-04T00:00',
      'application.created@04-03T00:00',
    ])
    // From inclusive, to exclusive.
    expect(summary(await listAuditEvents(t.db, { from: at(1, 1), to: at(3), limit: 100 }))).toEqual([
      'user.login_failed@04-03T00:00',
      'application.created@04-03T00:00',
      'user.logged_in@04-02T00:01',
    ])
    expect(
      summary(
        await listAuditEvents(t.db, {
          userId: alice.id,
          events: ['user.login_failed', 'user.logged_in'],
          from: at(1),
          to: at(2),
          limit: 100,
        }),
      ),
    ).toEqual(['user.logged_in@04-02T00:01', 'user.login_failed@04-02T00:00'])
  })

  it('pages by keyset: each page starts strictly after the last row of the one before, ties included', async () => {
    const all = await listAuditEvents(t.db, { limit: 100 })
    const seen: string[] = []
    let before: { occurredAt: Date; id: string } | undefined
    for (;;) {
      const page = await listAuditEvents(t.db, { limit: 2, ...(before ? { before } : {}) })
      seen.push(...page.map((r) => r.id))
      if (page.length < 2) break
      before = { occurredAt: page.at(-1)!.occurred_at, id: page.at(-1)!.id }
    }
    expect(seen).toEqual(all.map((r) => r.id))
  })

  it("reads a user's Security log 50 a page, with the cursor of the next page, and ignores a cursor it did not make", async () => {
    const carol = await createUser(t.db)
    for (let i = 0; i < 120; i++) await insertAuditEvent(t.db, event({ occurredAt: at(5, i), userId: carol.id, detail: `n${i}` }))
    const first = await readSecurityLog(t.db, carol.id, undefined)
    expect(first.events).toHaveLength(50)
    expect(first.events[0]!.detail).toBe('n119')
    expect(first.older).toBe(formatAuditCursor(first.events.at(-1)!))
    const second = await readSecurityLog(t.db, carol.id, first.older)
    expect(second.events.map((e) => e.detail)[0]).toBe('n69')
    const third = await readSecurityLog(t.db, carol.id, second.older)
    expect(third.events.map((e) => e.detail)).toEqual(Array.from({ length: 20 }, (_, i) => `n${19 - i}`))
    expect(third.older).toBeNull()
    for (const junk of ['', 'x', '1.2.3', '99999999999999999999.1', '1.-1', ['1.1', '2.2'], '0x10.1', ' 1.1']) {
      expect((await readSecurityLog(t.db, carol.id, junk)).events[0]!.detail).toBe('n119')
    }
  })
})
