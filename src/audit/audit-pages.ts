import type { Db } from '../db/connect.js'
import { type AuditEventFilter, type AuditEventRow, listAuditEvents } from '../repositories/audit-events.js'
import type { AuditEventName } from './audit-log.js'

/*
 * Reading the audit log (docs/operating/admin.md "Audit log"): the user's Security log page and the operator's
 * audit page, through one pager. What a row may hold is decided where it is written
 * (src/audit/audit-log.ts).
 */

/** The Security log page: a user's own events, newest first, a page at a time. */
export const SECURITY_LOG_PAGE_SIZE = 50

/** A page's end, as the "Older events" link carries it: `<occurred_at in ms>.<id>`. */
export function formatAuditCursor(row: Pick<AuditEventRow, 'occurred_at' | 'id'>): string {
  return `${row.occurred_at.getTime()}.${row.id}`
}

/** The cursor of an "Older events" link, or undefined for anything else (then the newest page). */
export function parseAuditCursor(value: unknown): { occurredAt: Date; id: string } | undefined {
  if (typeof value !== 'string') return undefined
  const m = /^(\d{1,15})\.(\d{1,18})$/.exec(value)
  if (!m) return undefined
  const occurredAt = new Date(Number(m[1]))
  return Number.isNaN(occurredAt.getTime()) ? undefined : { occurredAt, id: m[2]! }
}

export interface AuditLogPage {
  events: AuditEventRow[]
  /** The cursor of the next, older page; null on the last page. */
  older: string | null
}

/**
 * The one pager of the audit log: the events matching `filter`, newest first, starting after
 * `cursor` (an "Older events" link; anything else is the newest page). One row more than the
 * page is read to know whether an older page exists.
 */
async function readAuditPage(
  db: Db,
  filter: Omit<AuditEventFilter, 'before' | 'limit'>,
  cursor: unknown,
  pageSize: number,
): Promise<AuditLogPage> {
  const before = parseAuditCursor(cursor)
  const rows = await listAuditEvents(db, { ...filter, ...(before ? { before } : {}), limit: pageSize + 1 })
  const events = rows.slice(0, pageSize)
  const last = events.at(-1)
  return { events, older: rows.length > pageSize && last ? formatAuditCursor(last) : null }
}

/** One page of the user's own events, newest first, starting after `cursor` (an "Older events" link). */
export function readSecurityLog(db: Db, userId: string, cursor: unknown, pageSize = SECURITY_LOG_PAGE_SIZE): Promise<AuditLogPage> {
  return readAuditPage(db, { userId }, cursor, pageSize)
}

/** What the operator's audit page filters by; every field optional. */
export interface OperatorAuditFilter {
  event?: AuditEventName
  userId?: string
  clientId?: string
  from?: Date
  to?: Date
}

/** One page of every event matching `filter`, newest first, for the operator (docs/operating/admin.md). */
export function readAuditLog(
  db: Db,
  filter: OperatorAuditFilter,
  cursor: unknown,
  pageSize = SECURITY_LOG_PAGE_SIZE,
): Promise<AuditLogPage> {
  return readAuditPage(
    db,
    {
      ...(filter.event ? { events: [filter.event] } : {}),
      ...(filter.userId ? { userId: filter.userId } : {}),
      ...(filter.clientId ? { clientId: filter.clientId } : {}),
      ...(filter.from ? { from: filter.from } : {}),
      ...(filter.to ? { to: filter.to } : {}),
    },
    cursor,
    pageSize,
  )
}
