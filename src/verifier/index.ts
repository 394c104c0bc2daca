/*
 * `gatehouse/verifier`: what a resource API imports to accept Gatehouse access tokens.
 *
 *   const verifier = createVerifier({ mode: 'introspection', introspectionUrl, clientId, clientSecret, revocationStreamUrl })
 *   await app.register(gatehouseVerifier, { verifier })
 *   app.get('/me', { config: { requiredScope: 'read' } }, (request) => request.accessToken)
 *
 * The core (createVerifier) is framework-free; the Fastify plugin only imports Fastify's types.
 */
export { createVerifier, hasScope } from './core.js'
export type {
  CommonVerifierOptions,
  DatabaseVerifierOptions,
  IntrospectionVerifierOptions,
  NotificationState,
  Verifier,
  VerifierOptions,
} from './core.js'
export { failureBody } from './bearer.js'
export { gatehouseVerifier } from './fastify.js'
export type { VerifierPluginOptions } from './fastify.js'
export type { VerifiedToken, VerifyFailure, VerifyResult } from './types.js'
