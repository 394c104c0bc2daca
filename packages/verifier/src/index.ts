/*
 * `@gatehouse/verifier`: what a resource API imports to accept Gatehouse access tokens.
 *
 *   const verifier = createVerifier({ mode: 'introspection', introspectionUrl, clientId, clientSecret, revocationStreamUrl })
 *   await app.register(gatehouseVerifier, { verifier })                           // Fastify
 *   app.get('/me', requireToken(verifier, 'read'), (req, res) => res.json(req.accessToken))  // Express
 *
 * The core (createVerifier) is framework-free; the Fastify plugin only imports Fastify's types
 * and the node:http adapter only node:http's.
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
export { SEED_SCOPES, ScopeFileError, parseScopesFile, readScopesFile } from './scope-catalogue.js'
export type { ScopeCatalogue, ScopeDefinition } from './scope-catalogue.js'
export type { DatabaseOption, VerifierDatabase } from './database-source.js'
export { authenticateRequest, requireToken, resourceMetadataHandler, sendFailure } from './node.js'
export type { RequestWithToken } from './node.js'
export { gatehouseVerifier } from './fastify.js'
export type { VerifierPluginOptions } from './fastify.js'
export { RESOURCE_METADATA_HEADERS, RESOURCE_METADATA_PATH } from './resource-metadata.js'
export type { ProtectedResourceMetadata, ResourceMetadata, ResourceMetadataOptions } from './resource-metadata.js'
export type { ResourceRequest, VerifiedToken, VerifyFailure, VerifyResult } from './types.js'
