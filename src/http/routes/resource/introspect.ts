import type { FastifyInstance } from 'fastify'
import { type IntrospectionContext, introspect } from '../../../oauth/introspection.js'
import { singleParams } from '../../../oauth/params.js'
import { noStore } from '../oauth/json-errors.js'

/** POST /oauth/introspect (RFC 7662 2): form parameters in the body, never the query string. */
export default async function introspectRoute(app: FastifyInstance, ctx: IntrospectionContext): Promise<void> {
  app.post('/oauth/introspect', async (request, reply) => {
    const body = await introspect(ctx, singleParams(request.body), request.headers.authorization)
    return noStore(reply).type('application/json; charset=utf-8').send(body)
  })
}
