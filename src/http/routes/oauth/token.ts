import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { DEVICE_CODE_GRANT_TYPE, requestParams } from '../../../oauth/index.js'
import { noStore } from './json-errors.js'
import { openToRegisteredOrigins } from '../../cors.js'

/** POST /oauth/token (RFC 6749 4.1.3 / 5.1; RFC 8628 3.4 for the device code grant). */
export default async function tokenRoutes(app: FastifyInstance, { oauth, device }: Services): Promise<void> {
  // A single-page app calls it from its registered origin (src/http/cors.ts).
  const cors = openToRegisteredOrigins(
    app,
    '/oauth/token',
    { methods: ['POST'], allowHeaders: ['content-type'] },
    oauth.allowsBrowserOrigin,
  )
  app.post('/oauth/token', { onRequest: cors }, async (request, reply) => {
    const params = requestParams(request.body, request.query)
    const grantType = params.grant_type
    const response =
      typeof grantType === 'string' && grantType === DEVICE_CODE_GRANT_TYPE
        ? await device.exchangeDeviceCode(params, request.headers.authorization)
        : await oauth.exchangeCode(params, request.headers.authorization)
    return noStore(reply).send(response)
  })

  // RFC 8628 3.1: the device's first request; answered like the token endpoint (JSON, no-store).
  app.post('/oauth/device_authorization', async (request, reply) => {
    const response = await device.authorizeDevice(requestParams(request.body, request.query), request.headers.authorization)
    return noStore(reply).send(response)
  })
}
