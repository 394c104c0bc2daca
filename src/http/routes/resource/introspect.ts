import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { singleParams } from '../../../oauth/index.js'
import { noStore } from '../oauth/json-errors.js'

/** POST /oauth/introspect (RFC 7662 2): form parameters in the body, never the query string. */
export default async function introspectRoute(app: FastifyInstance, { resource }: Pick<Services, 'resource'>): Promise<void> {
  app.post('/oauth/introspect', async (request, reply) => {
    const body = await resource.introspect(singleParams(request.body), request.headers.authorization)
    return noStore(reply).type('application/json; charset=utf-8').send(body)
  })
}
