import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { DEVICE_CODE_GRANT_TYPE, requestReading } from '../../../oauth/index.js'
import { noStore, provideNonce } from './json-errors.js'
import { openToRegisteredOrigins } from '../../cors.js'

/** POST /oauth/token (RFC 6749 4.1.3 / 5.1; RFC 8628 3.4 for the device code grant). */
export default async function tokenRoutes(app: FastifyInstance, { oauth, device }: Services): Promise<void> {
  // A single-page app calls it from its registered origin (src/http/cors.ts).
  const cors = openToRegisteredOrigins(
    app,
    '/oauth/token',
    // RFC 9449 §4.1, §8: a browser's client sends its proof and reads the server's nonce.
    { methods: ['POST'], allowHeaders: ['content-type', 'dpop'], exposeHeaders: ['dpop-nonce'] },
    oauth.allowsBrowserOrigin,
  )
  app.post('/oauth/token', { onRequest: cors }, async (request, reply) => {
    // RFC 8707 §2: `resource` may be repeated; its values come apart from the other parameters.
    const { params, resources } = requestReading(request.body, request.query)
    const grantType = params.grant_type
    // RFC 9449 §5: every grant binds its tokens to the key a valid proof shows; no header, no await.
    const header = request.headers.dpop
    const dpop = header === undefined ? undefined : await oauth.checkDpop(header, 'POST', '/oauth/token')
    const response =
      typeof grantType === 'string' && grantType === DEVICE_CODE_GRANT_TYPE
        ? await device.exchangeDeviceCode(params, request.headers.authorization, dpop, resources)
        : await oauth.exchangeCode(params, request.headers.authorization, dpop, resources)
    if (dpop !== undefined) await provideNonce(oauth, reply)
    return noStore(reply).send(response)
  })

  // RFC 8628 3.1: the device's first request; answered like the token endpoint (JSON, no-store).
  app.post('/oauth/device_authorization', async (request, reply) => {
    const { params, resources } = requestReading(request.body, request.query)
    const response = await device.authorizeDevice(params, request.headers.authorization, resources)
    return noStore(reply).send(response)
  })
}
