import type { FastifyInstance } from 'fastify'
import { AUDIT_EVENTS, describeAuditEvent, isAuditEventName } from '../../../audit/index.js'
import type { Services } from '../../../services.js'
import { render } from '../../render.js'
import { searchQuery } from './query.js'

type AuditQuery = { event?: unknown; user?: unknown; client_id?: unknown; from?: unknown; to?: unknown; before?: unknown }

const DAY_MS = 86_400_000

/** A yyyy-mm-dd date input as the start of that UTC day; undefined when empty or not a date. */
function day(v: unknown): Date | undefined {
  if (typeof v !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(v)) return undefined
  const d = new Date(`${v}T00:00:00Z`)
  return Number.isNaN(d.getTime()) ? undefined : d
}

const formatSecond = (d: Date) => `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`

/**
 * GET /admin/audit: every security event, newest first, filtered by event, account (email),
 * application (client_id) and days (UTC, `to` inclusive), 50 a page.
 */
export default async function adminAuditRoutes(app: FastifyInstance, { operator }: Services): Promise<void> {
  app.get<{ Querystring: AuditQuery }>('/admin/audit', async (request, reply) => {
    const q = request.query
    const event = isAuditEventName(q.event) ? q.event : undefined
    const email = searchQuery(q.user)
    const clientId = searchQuery(q.client_id)
    const from = day(q.from)
    const toDay = day(q.to)
    const filter = {
      event,
      email: email === '' ? undefined : email,
      clientId: clientId === '' ? undefined : clientId,
      from,
      to: toDay === undefined ? undefined : new Date(toDay.getTime() + DAY_MS),
    }
    const page = await operator.readAuditLog(filter, q.before)
    const values = {
      event: event ?? '',
      user: email,
      client_id: clientId,
      from: from?.toISOString().slice(0, 10) ?? '',
      to: toDay?.toISOString().slice(0, 10) ?? '',
    }
    const olderQuery = new URLSearchParams(Object.entries(values).filter(([, v]) => v !== ''))
    if (page.older !== null) olderQuery.set('before', page.older)
    return render(request, reply, 'admin/audit.eta', {
      // A table page: the full width of the window (views/layouts/base.eta).
      wide: true,
      title: 'Audit log',
      values,
      unknownUser: page.unknownUser,
      paged: typeof q.before === 'string',
      older: page.older === null ? null : `/admin/audit?${olderQuery}`,
      eventOptions: Object.entries(AUDIT_EVENTS).map(([value, label]) => ({ value, label })),
      events: page.events.map((e) => ({
        time: formatSecond(e.occurred_at),
        timeIso: e.occurred_at.toISOString(),
        what: describeAuditEvent(e.event),
        event: e.event,
        account: e.user_email,
        actor: e.actor_email,
        application: e.application_name,
        clientId: e.client_id,
        address: e.client_address,
        detail: e.detail,
      })),
    })
  })
}
