import type { NewAuditEvent } from '../../src/repositories/audit-events.js'
import type { UserFixture } from './factories.js'

/**
 * An audit event to insert (insertAuditEvent): by default `user`'s own log-in from 192.0.2.1,
 * with no application; `fields` says when, and whatever else differs.
 */
export function auditEventOf(user: UserFixture, fields: Partial<NewAuditEvent> & { occurredAt: Date }): NewAuditEvent {
  return {
    event: 'user.logged_in',
    userId: user.id,
    actorId: user.id,
    clientId: null,
    applicationName: null,
    clientAddress: '192.0.2.1',
    detail: '',
    ...fields,
  }
}
