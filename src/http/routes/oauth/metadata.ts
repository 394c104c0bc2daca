import type { FastifyInstance } from 'fastify'
import { JWKS_MAX_AGE_SECONDS } from '../../../oauth/index.js'
import type { Services } from '../../../services.js'
import { openToRegisteredOrigins } from '../../cors.js'

/** Public and read-only documents: a registered single-page app's page may read them, with GET (src/http/cors.ts). */
const READ_ONLY = { methods: ['GET', 'HEAD'] } as const

/** GET /.well-known/oauth-authorization-server (RFC 8414 3) and OpenID Connect's discovery and JWKS. */
export default async function metadataRoutes(app: FastifyInstance, { oauth, identity }: Services): Promise<void> {
  const cors = (path: string) => openToRegisteredOrigins(app, path, READ_ONLY, oauth.allowsBrowserOrigin)
  const metadata = oauth.metadata()
  const authorizationServer = '/.well-known/oauth-authorization-server'
  app.get(authorizationServer, { onRequest: cors(authorizationServer) }, async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=3600').send(metadata),
  )

  // OpenID Connect Discovery 1.0 4: public and read-only.
  const discovery = identity.discovery()
  const openIdConfiguration = '/.well-known/openid-configuration'
  app.get(openIdConfiguration, { onRequest: cors(openIdConfiguration) }, async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=3600').send(discovery),
  )

  // The ID Tokens' keys (RFC 7517 5, OpenID Connect Core 10.1): public and read-only; a
  // single-page app verifies ID Tokens with them. max-age bounds how long a
  // relying party may miss a rotated key, which is why a new key signs only later
  // (docs/decisions/014-signing-keys.md).
  const jwksPath = '/.well-known/jwks.json'
  app.get(jwksPath, { onRequest: cors(jwksPath) }, async (_request, reply) => {
    const jwks = await identity.jwks()
    return reply
      .header('cache-control', `public, max-age=${JWKS_MAX_AGE_SECONDS}`)
      .type('application/jwk-set+json; charset=utf-8')
      .send(jwks)
  })
}
