import {
  DEFAULT_NEGATIVE_TTL_MS,
  TokenCache,
  type VerifiedToken,
  type VerifierDatabase,
  lookUpInDatabase,
} from '@gatehouse/verifier/shared'
import type { Clock } from '../lib/clock.js'
import { activeResponse } from './introspection.js'
import { tokenInfoResponse } from './token-info.js'

/** A valid token with both of its answers, serialised once per cache entry, not once per request. */
export interface ServerTokenEntry {
  readonly token: VerifiedToken
  readonly introspection: string
  /** For the token's own client, which is not a resource server: without `username`. */
  readonly ownIntrospection: string
  readonly tokenInfo: string
}

export type ServerTokenCache = TokenCache<ServerTokenEntry>

/**
 * The server's cache of token validity for introspection and token info: the verifier's cache
 * and the verifier's live-token query (docs/decisions/004-caching-and-ttl-bounds.md), kept
 * honest by the revocation bus.
 */
export function createServerTokenCache(options: {
  database: Pick<VerifierDatabase, 'query'>
  clock: Clock
  ttlMs: number
  maxEntries: number
}): ServerTokenCache {
  const { database, clock } = options
  return new TokenCache<ServerTokenEntry>({
    maxEntries: options.maxEntries,
    ttlMs: options.ttlMs,
    negativeTtlMs: DEFAULT_NEGATIVE_TTL_MS,
    now: () => clock().getTime(),
    wrap: (token) => ({
      token,
      introspection: activeResponse(token),
      ownIntrospection: activeResponse(token, false),
      tokenInfo: tokenInfoResponse(token),
    }),
    lookup: (_token, digest) => lookUpInDatabase(database, digest),
  })
}
