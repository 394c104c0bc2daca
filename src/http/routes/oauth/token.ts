import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { requestParams } from '../../../oauth/index.js'
import { noStore } from './json-errors.js'
import { openToRegisteredOrigins } from '../../cors.js'

/** POST /oauth/token (RFC 6749 4.1.3 / 5.1). */
export default async function tokenRoutes(app: FastifyInstance, { oauth }: Services): Promise<void> {
  // A single-page app calls it from its registered origin (src/http/cors.ts).
  const cors = openToRegisteredOrigins(
    app,
    '/oauth/token',
    { methods: ['POST'], allowHeaders: ['content-type'] },
    oauth.allowsBrowserOrigin,
  )
  app.post('/oauth/token', { onRequest: cors }, async (request, reply) => {
    const response = await oauth.exchangeCode(requestParams(request.body, request.query), request.headers.authorization)
    return noStore(reply).send(response)
  })
}
