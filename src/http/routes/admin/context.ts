import type { FastifyRequest } from 'fastify'
import type { OperatorContext } from '../../../operator/moderation.js'
import type { Services } from '../../../services.js'

/** The moderation context of one request: the logged-in operator acts from the client's address. */
export function operatorContext(deps: Services, _request: FastifyRequest): OperatorContext {
  return { db: deps.database.db, bus: deps.bus, record: async () => {} }
}
