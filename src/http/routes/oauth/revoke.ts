import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { requestParams } from '../../../oauth/index.js'
import { noStore } from './json-errors.js'

/** POST /oauth/revoke (RFC 7009 2): 200 with an empty body on success. */
export default async function revokeRoutes(app: FastifyInstance, { oauth }: Services): Promise<void> {
  app.post('/oauth/revoke', async (request, reply) => {
    await oauth.revokeToken(requestParams(request.body, request.query), request.headers.authorization)
    return noStore(reply).code(200).send()
  })
}
