import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { setOAuthJsonErrorHandler } from '../oauth/json-errors.js'
import introspectRoute from './introspect.js'
import revocationStreamRoute from './revocation-stream.js'
import tokenInfoRoute from './token-info.js'
import userInfoRoute from './userinfo.js'

/**
 * The resource-server side of Gatehouse: introspection, token info, UserInfo and the revocation stream.
 * Registered at the root, outside the page context: these hot paths never run the session or
 * CSRF hooks. Their caches and the revocation stream's feed hear every revocation through the bus.
 */
export default async function resourceRoutes(app: FastifyInstance, services: Services): Promise<void> {
  await app.register(async (api) => {
    setOAuthJsonErrorHandler(api, services.probes)
    for (const routes of [introspectRoute, tokenInfoRoute, userInfoRoute, revocationStreamRoute]) await routes(api, services)
  })
}
