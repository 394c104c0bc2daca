/*
 * `@gatehouse/verifier/shared`: what Gatehouse itself and its verifiers must agree on (the token
 * format, revocation notices, the scope rule, the live-token view and query) and the cache both use.
 * Gatehouse's server imports these from here; the verifier imports nothing of the server.
 * Not a stable API for resource APIs: use the package's main entry.
 */
export {
  ACCESS_TOKEN_PREFIX,
  REFRESH_TOKEN_PREFIX,
  formatAccessToken,
  formatRefreshToken,
  isWellFormedAccessToken,
  isWellFormedRefreshToken,
  sha256Hex,
} from './token-format.js'
export {
  MAX_DIGESTS_PER_NOTICE,
  type NoticeOrigin,
  REVOCATION_CHANNEL,
  type RevocationNotice,
  decodeNotice,
  encodeNotices,
} from './notices.js'
export { scopeSatisfies } from './scope.js'
export {
  IDENTITY_SCOPES,
  SCOPE_TOKEN,
  SEED_SCOPES,
  type ScopeCatalogue,
  type ScopeDefinition,
  ScopeFileError,
  definedScopes,
  parseScopesFile,
  readScopesFile,
  scopeCheck,
  withImplied,
} from './scope-catalogue.js'
export { TtlLru } from './ttl-lru.js'
export { DEFAULT_NEGATIVE_TTL_MS, MAX_TTL_MS, TokenCache, type TokenCacheOptions } from './token-cache.js'
export {
  LIVE_TOKEN_SQL,
  LIVE_TOKEN_VIEW,
  LIVE_TOKEN_VIEW_V1,
  LIVE_TOKEN_VIEW_V2,
  LIVE_TOKEN_VIEW_V3,
  type VerifierDatabase,
  lookUpInDatabase,
  toVerifiedToken,
} from './database-source.js'
export {
  type ListenEvents,
  type ListenOptions,
  type NotificationHandler,
  type PgSubscription,
  listenPg,
  listenerSet,
  subscribePg,
} from './pg-listen.js'
export { resilientPool } from './pg-pool.js'
export { BearerChallenges, DpopChallenges, bearerToken, dpopToken, failureBody, failureHeaders } from './bearer.js'
export { MemoryReplayCache, type PresentedRequest, type ProofReplayCache, checkPresentation, singleProof } from './presentation.js'
export type { VerifiedToken, VerifyFailure } from './types.js'
export {
  DEFAULT_DPOP_MAX_AGE_SECONDS,
  DPOP_SIGNING_ALGS,
  type DpopProof,
  DpopProofError,
  type DpopRequest,
  MAX_DPOP_PROOF_LENGTH,
  accessTokenHash,
  checkDpopProof,
  normalizeHtu,
} from './dpop.js'
