import type { FastifyInstance } from 'fastify'
import { SCOPES } from '../../../oauth/scope.js'
import type { Services } from '../../../services.js'

/** GET /.well-known/oauth-authorization-server (RFC 8414 2, 3). */
export default async function metadataRoutes(app: FastifyInstance, deps: Services): Promise<void> {
  const issuer = deps.config.publicUrl
  const authMethods = ['client_secret_basic', 'client_secret_post']
  const metadata = Object.freeze({
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    introspection_endpoint: `${issuer}/oauth/introspect`,
    scopes_supported: [...SCOPES],
    response_types_supported: ['code', 'token'],
    response_modes_supported: ['query', 'fragment'],
    grant_types_supported: ['authorization_code', 'implicit'],
    token_endpoint_auth_methods_supported: authMethods,
    revocation_endpoint_auth_methods_supported: authMethods,
    introspection_endpoint_auth_methods_supported: authMethods,
    code_challenge_methods_supported: ['S256', 'plain'],
    // RFC 9207 3: every authorization response carries `iss`.
    authorization_response_iss_parameter_supported: true,
  })
  app.get('/.well-known/oauth-authorization-server', async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=3600').send(metadata),
  )
}
