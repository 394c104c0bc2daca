import type { FastifyRequest } from 'fastify'
import type { OperatorContext } from '../../../operator/moderation.js'
import type { Services } from '../../../services.js'
import { auditTrail } from '../../audit.js'

/** The moderation context of one request: the logged-in operator acts, from the client's address (the audit log's actor). */
export function operatorContext(deps: Services, request: FastifyRequest): OperatorContext {
  const trail = auditTrail(request, deps)
  return { db: deps.database.db, bus: deps.bus, record: (event) => trail.record(event) }
}
