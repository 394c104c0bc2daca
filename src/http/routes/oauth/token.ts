import type { FastifyInstance } from 'fastify'
import { requestParams } from '../../../oauth/params.js'
import { exchangeAuthorizationCode } from '../../../oauth/token-exchange.js'
import type { Services } from '../../../services.js'
import { noStore } from './json-errors.js'

/** POST /oauth/token (RFC 6749 4.1.3 / 5.1). */
export default async function tokenRoutes(app: FastifyInstance, deps: Services): Promise<void> {
  const ctx = {
    db: deps.database.db,
    clock: deps.clock,
    bus: deps.bus,
    clientAuthFailureLimit: deps.config.tokenAuthFailureLimit,
    tokenQuota: deps.tokenQuota,
  }
  app.post('/oauth/token', async (request, reply) => {
    const params = requestParams(request.body, request.query)
    const response = await exchangeAuthorizationCode(ctx, params, request.headers.authorization)
    return noStore(reply).send(response)
  })
}
