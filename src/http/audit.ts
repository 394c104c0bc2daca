import type { FastifyRequest } from 'fastify'
import type { Actor } from '../audit/actor.js'
import type { AuditTrail } from '../audit/audit-log.js'
import { type Services, clientAddressForAudit } from '../services.js'

/**
 * Who this request acts as, for the use cases' audit records (src/audit/actor.ts): the
 * logged-in user, if any, and the client's address as Fastify works it out under TRUST_PROXY.
 */
export function actorOf(request: FastifyRequest): Actor {
  return { userId: request.user?.id ?? null, address: clientAddressForAudit(request.ip) }
}

/**
 * The audit trail of this request (src/audit/audit-log.ts), for the routes whose domain
 * functions still take a trail: the recorder built in src/services.ts, bound to actorOf(request).
 */
export function auditTrail(request: FastifyRequest, deps: Pick<Services, 'audit'>): AuditTrail {
  const actor = actorOf(request)
  return deps.audit.trail(actor.userId, actor.address)
}
