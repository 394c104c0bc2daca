import { sql } from 'kysely'
import type { Db } from '../db/connect.js'

/*
 * The audit log's SQL (src/audit/audit-log.ts decides what is recorded and how it reads). Rows
 * are only ever inserted and, by the janitor, deleted (src/repositories/janitor.ts).
 */

export interface NewAuditEvent {
  occurredAt: Date
  event: string
  userId: string | null
  actorId: string | null
  clientId: string | null
  applicationName: string | null
  clientAddress: string | null
  detail: string
}

export async function insertAuditEvent(db: Db, e: NewAuditEvent): Promise<void> {
  await db
    .insertInto('audit_events')
    .values({
      occurred_at: e.occurredAt,
      event: e.event,
      user_id: e.userId,
      actor_id: e.actorId,
      client_id: e.clientId,
      application_name: e.applicationName,
      client_address: e.clientAddress,
      detail: e.detail,
    })
    .execute()
}

/** Where a page of events ends: the next page holds the events strictly older than this one. */
export interface AuditCursor {
  occurredAt: Date
  /** The row's id, a bigint written in decimal. */
  id: string
}

export interface AuditEventRow {
  id: string
  occurred_at: Date
  event: string
  user_id: string | null
  actor_id: string | null
  client_id: string | null
  application_name: string | null
  client_address: string | null
  detail: string
  /** The emails of the accounts as they are now; null when there is none (anonymous, or deleted since). */
  user_email: string | null
  actor_email: string | null
}

/** Every filter is optional; those given must all hold. */
export interface AuditEventFilter {
  /** One of these event names. */
  events?: readonly string[]
  /** The account the events concern (its Security log). */
  userId?: string
  /** Whoever did it. */
  actorId?: string
  clientId?: string
  /** occurred_at ≥ from. */
  from?: Date
  /** occurred_at < to. */
  to?: Date
  /** Only events older than this (the previous page's last row). */
  before?: AuditCursor
  limit: number
}

/**
 * Events newest first (occurred_at, then id, so equal times keep one order), filtered; the
 * Security log asks with `userId`, the operator's view with any combination. Keyset-paginated:
 * each page costs the same however deep, using audit_events_user_idx, audit_events_occurred_at_idx
 * or the filter's own index.
 */
export function listAuditEvents(db: Db, filter: AuditEventFilter): Promise<AuditEventRow[]> {
  let query = db
    .selectFrom('audit_events as e')
    .leftJoin('users as u', 'u.id', 'e.user_id')
    .leftJoin('users as a', 'a.id', 'e.actor_id')
    .select([
      sql<string>`e.id::text`.as('id'),
      'e.occurred_at',
      'e.event',
      'e.user_id',
      'e.actor_id',
      'e.client_id',
      'e.application_name',
      'e.client_address',
      'e.detail',
      'u.email as user_email',
      'a.email as actor_email',
    ])
  if (filter.events !== undefined) {
    if (filter.events.length === 0) return Promise.resolve([])
    query = query.where('e.event', 'in', [...filter.events])
  }
  if (filter.userId !== undefined) query = query.where('e.user_id', '=', filter.userId)
  if (filter.actorId !== undefined) query = query.where('e.actor_id', '=', filter.actorId)
  if (filter.clientId !== undefined) query = query.where('e.client_id', '=', filter.clientId)
  if (filter.from !== undefined) query = query.where('e.occurred_at', '>=', filter.from)
  if (filter.to !== undefined) query = query.where('e.occurred_at', '<', filter.to)
  if (filter.before !== undefined) {
    const { occurredAt, id } = filter.before
    query = query.where(sql<boolean>`(e.occurred_at, e.id) < (${occurredAt}, ${id}::bigint)`)
  }
  return query.orderBy('e.occurred_at', 'desc').orderBy('e.id', 'desc').limit(filter.limit).execute()
}
