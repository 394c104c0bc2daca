import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { describeAuditEvent } from '../../../audit/index.js'
import { render } from '../../render.js'
import { requireUser } from '../../session.js'

/** "2026-01-01 12:00:05 UTC": to the second, since log-ins and failures come seconds apart. */
function formatSecond(d: Date): string {
  return `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`
}

/**
 * GET /account/security-log: the logged-in user's own security events (docs/operating/admin.md "Audit log"),
 * newest first, 50 a page, with an "Older events" link carrying where the page ended.
 */
export default async function securityLogRoutes(app: FastifyInstance, deps: Services) {
  app.get<{ Querystring: { before?: string } }>('/account/security-log', { preHandler: requireUser }, async (request, reply) => {
    const page = await deps.accounts.securityLog({ userId: request.user!.id }, request.query.before)
    return render(request, reply, 'account/security-log.eta', {
      // A table page: the full width of the window (views/layouts/base.eta).
      wide: true,
      title: 'Security log',
      retentionDays: Math.round(deps.config.janitor.auditRetentionMs / 86_400_000),
      paged: request.query.before !== undefined,
      older: page.older === null ? null : `/account/security-log?before=${encodeURIComponent(page.older)}`,
      events: page.events.map((e) => ({
        time: formatSecond(e.occurred_at),
        timeIso: e.occurred_at.toISOString(),
        what: describeAuditEvent(e.event),
        application: e.application_name,
        clientId: e.client_id,
        address: e.client_address,
        detail: e.detail,
        byOther: e.actor_id !== null && e.actor_id !== e.user_id,
      })),
    })
  })
}
