/*
 * The OAuth domain's door (docs/architecture.md "Doors"): what the edges, src/http/ and src/cli/,
 * may import of src/oauth/. The use cases themselves reach the edges built, through `Services`;
 * this module adds their types, the errors the edges translate into answers (RFC 6749 5.2,
 * RFC 6750 3.1) and the pure helpers pages and answers are formatted with.
 */
export type { OAuthUseCases, ResourceUseCases } from './use-cases.js'
export type { IdentityUseCases } from './identity/identity.js'
export type { AuthorizeAnswer } from './authorize/authorize-answers.js'
export type { LogoutRequest } from './logout/logout.js'
export type { DeviceUseCases } from './device/use-cases.js'
export type { DeviceConsent } from './device/device-page.js'
/** RFC 8628 3.4: the device code grant's grant_type, which the token route dispatches on. */
export { DEVICE_CODE_GRANT_TYPE } from './device/device-flow.js'
export {
  InvalidRequestError,
  OAuthError,
  ResourceServerOnlyError,
  ServerError,
  SlowDownError,
  TemporarilyUnavailableError,
} from './errors.js'
/* How a token was presented to Gatehouse's own resource endpoints (RFC 6750, RFC 9449 §7). */
export { type BindingCheck, bearerBinding, bearerChallenges, dpopChallenges } from './token/presentation.js'
/* The OAuth parameters as RFC 6749 3.1 and 3.2 read them. */
export { checkedParams, requestParams, requestReading, singleParams } from './params.js'
export {
  MAX_RESOURCE_IDENTIFIER_LENGTH,
  type ResourceSettings,
  type ResourceTarget,
  canonicalIdentifier,
  identifierProblem,
  resourceNames,
} from './resources/resource-indicators.js'
export { ScopeVocabulary } from './grants/scope.js'
/** The JWKS's Cache-Control max-age (docs/decisions/014-signing-keys.md). */
export { JWKS_MAX_AGE_SECONDS } from './identity/signing-keys.js'
/* A redirect URI's host as people read it, and where an answer to the client goes. */
export { unicodeHostOf } from './clients/redirect-uri-registration.js'
export { type ClientResponse, describeRedirectTarget, responseLocation } from './clients/redirect-uri.js'
/* Client ID Metadata Documents' settings, which src/config.ts builds (docs/decisions/026-client-metadata-documents.md). */
export type { ClientMetadataSettings } from './clients/metadata-clients.js'
