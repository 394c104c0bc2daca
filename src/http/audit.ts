import type { FastifyRequest } from 'fastify'
import type { Actor } from '../audit/index.js'
import { clientAddressForAudit } from '../limits/index.js'

/**
 * Who this request acts as, for the use cases' audit records (src/audit/actor.ts): the
 * logged-in user, if any, and the client's address as Fastify works it out under TRUST_PROXY.
 */
export function actorOf(request: FastifyRequest): Actor {
  return { userId: request.user?.id ?? null, address: clientAddressForAudit(request.ip) }
}
