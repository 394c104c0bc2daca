import type { FastifyRequest } from 'fastify'
import type { AuditTrail } from '../audit/audit-log.js'
import { clientAddressForAudit } from '../limits/client-address.js'
import type { Services } from '../services.js'

/**
 * The audit trail of this request (src/audit/audit-log.ts): the recorder built in
 * src/services.ts, bound to the logged-in user, if any, and the client's address as Fastify
 * works it out under TRUST_PROXY.
 */
export function auditTrail(request: FastifyRequest, deps: Pick<Services, 'audit'>): AuditTrail {
  return deps.audit.trail(request.user?.id ?? null, clientAddressForAudit(request.ip))
}
