import type { FastifyInstance } from 'fastify'
import { requestParams } from '../../../oauth/params.js'
import { revokeForClient } from '../../../oauth/token-revocation.js'
import type { Services } from '../../../services.js'
import { noStore } from './json-errors.js'

/** POST /oauth/revoke (RFC 7009 2): 200 with an empty body on success. */
export default async function revokeRoutes(app: FastifyInstance, deps: Services): Promise<void> {
  const ctx = { db: deps.database.db, clock: deps.clock, bus: deps.bus, clientAuthFailureLimit: deps.config.tokenAuthFailureLimit }
  app.post('/oauth/revoke', async (request, reply) => {
    const params = requestParams(request.body, request.query)
    await revokeForClient(ctx, params, request.headers.authorization)
    return noStore(reply).code(200).send()
  })
}
