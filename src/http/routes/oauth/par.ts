import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { singleParams } from '../../../oauth/index.js'
import { noStore } from './json-errors.js'

/** POST /oauth/par (RFC 9126 2): the parameters in the form body, the client authenticated as at the token endpoint. */
export default async function parRoutes(app: FastifyInstance, { oauth }: Services): Promise<void> {
  app.post('/oauth/par', async (request, reply) => {
    const response = await oauth.pushAuthorizationRequest(singleParams(request.body), request.headers.authorization)
    return noStore(reply).code(201).send(response)
  })
}
