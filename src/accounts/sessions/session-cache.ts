import { TtlLru } from '@gatehouse/verifier/shared'
import type { Clock } from '../../lib/clock.js'
import type { SessionUser } from './sessions.js'

/**
 * How long a session read stays usable from the cache. A cached entry never authorizes anything
 * by itself (below), so the bound is on how stale "Active sessions" may show the last visit:
 * LAST_SEEN_GRANULARITY_MS plus this.
 */
export const SESSION_CACHE_TTL_MS = 60_000

/**
 * Sessions' users by stored digest, for GET /oauth/authorize with remembered consent, so that a
 * browser that authorizes again within a minute (single sign-on to a second application, a
 * silent renewal) costs one statement rather than two
 * (docs/decisions/004-caching-and-ttl-bounds.md). As with ApplicationCache, a cached user is only
 * ever acted on through `insertCodeUnderGrant`, which issues the code only while the session is
 * live and the user's checked values (SessionCheck) are the cached ones; any other answer is
 * worked out from a fresh read. So a log-out, a suspension or a removed second factor in any
 * process takes effect at once, and nothing needs to reach this cache through the bus.
 * SESSION_CACHE_MAX_ENTRIES bounds it; 0 turns it off. Keys are digests, never cookies.
 */
export class SessionCache {
  readonly #lru: TtlLru<SessionUser> | undefined

  constructor(
    private readonly clock: Clock,
    maxEntries: number,
    private readonly ttlMs = SESSION_CACHE_TTL_MS,
  ) {
    this.#lru = maxEntries > 0 ? new TtlLru(maxEntries) : undefined
  }

  /** The cached user of the session with this digest, marked `cached`. */
  get(sessionKey: string): SessionUser | undefined {
    return this.#lru?.get(sessionKey, this.clock().getTime())
  }

  /** After a read from the database: the session's user, or that the session is gone. */
  remember(sessionKey: string, user: SessionUser | undefined): void {
    if (this.#lru === undefined) return
    if (user === undefined) this.#lru.delete(sessionKey)
    else this.#lru.set(sessionKey, { ...user, cached: true }, this.clock().getTime() + this.ttlMs)
  }

  forget(sessionKey: string): void {
    this.#lru?.delete(sessionKey)
  }
}
