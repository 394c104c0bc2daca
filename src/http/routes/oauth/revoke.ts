import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { requestParams } from '../../../oauth/index.js'
import { noStore } from './json-errors.js'
import { openToRegisteredOrigins } from '../../cors.js'

/** POST /oauth/revoke (RFC 7009 2): 200 with an empty body on success. */
export default async function revokeRoutes(app: FastifyInstance, { oauth }: Services): Promise<void> {
  // A single-page app calls it from its registered origin (src/http/cors.ts).
  const cors = openToRegisteredOrigins(
    app,
    '/oauth/revoke',
    { methods: ['POST'], allowHeaders: ['content-type'] },
    oauth.allowsBrowserOrigin,
  )
  app.post('/oauth/revoke', { onRequest: cors }, async (request, reply) => {
    await oauth.revokeToken(requestParams(request.body, request.query), request.headers.authorization)
    return noStore(reply).code(200).send()
  })
}
