import {
  DEFAULT_NEGATIVE_TTL_MS,
  TokenCache,
  type VerifiedToken,
  type VerifierDatabase,
  lookUpInDatabase,
} from '@gatehouse/verifier/shared'
import type { Clock } from '../../lib/clock.js'
import { activeResponse } from './introspection.js'
import { tokenInfoResponse } from './token-info.js'

/**
 * A valid token with its answers, each serialised at most once per cache entry, not once per
 * request, and only when a route asks for it: a token is usually checked by one route only.
 */
export class ServerTokenEntry {
  #introspection: string | undefined
  #ownIntrospection: string | undefined
  #tokenInfo: string | undefined

  constructor(
    readonly token: VerifiedToken,
    readonly clock: Clock,
  ) {}

  /** RFC 7662, for resource servers. */
  get introspection(): string {
    return (this.#introspection ??= activeResponse(this.token))
  }

  /** For the token's own client, which is not a resource server: without `username`. */
  get ownIntrospection(): string {
    return (this.#ownIntrospection ??= activeResponse(this.token, false))
  }

  /** Serialised once for a token valid until revoked; an expiring one's `expires_in` counts down, so each time. */
  get tokenInfo(): string {
    if (this.token.expiresAt !== null) return tokenInfoResponse(this.token, Math.floor(this.clock().getTime() / 1000))
    return (this.#tokenInfo ??= tokenInfoResponse(this.token, 0))
  }
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
    wrap: (token) => new ServerTokenEntry(token, clock),
    lookup: (_token, digest) => lookUpInDatabase(database, digest),
  })
}
