import { isWellFormedAccessToken, sha256Hex } from './token-format.js'
import type { NoticeOrigin, RevocationNotice } from './notices.js'
import { TtlLru } from './ttl-lru.js'
import type { VerifiedToken } from './types.js'

/** Gatehouse's bound on revocation (5 minutes); no cache may hold longer. */
export const MAX_TTL_MS = 300_000
export const DEFAULT_TTL_MS = 60_000
/** Unknown and revoked tokens are remembered briefly, so a repeated bad token costs one lookup. */
export const DEFAULT_NEGATIVE_TTL_MS = 5_000
export const DEFAULT_MAX_ENTRIES = 100_000
/** How long a locally announced revocation waits for its NOTIFY before it is taken as rolled back. */
const PENDING_MS = 10_000
/** Beyond this many unconfirmed local revocations (LISTEN down), nothing new is cached at all. */
const MAX_PENDING = 10_000
/** No access token is this long: longer strings are refused before they are hashed. */
const MAX_TOKEN_LENGTH = 512

export interface TokenCacheOptions<V> {
  maxEntries: number
  ttlMs: number
  negativeTtlMs: number
  /** Milliseconds; injected so tests move time by hand. */
  now: () => number
  /** What the owner keeps per valid token, e.g. its pre-serialised answers. */
  wrap: (token: VerifiedToken) => V
  /** The source of truth on a miss: the token when valid, undefined when unknown or revoked. */
  lookup: (token: string, digest: string) => Promise<VerifiedToken | undefined>
}

interface Lookup<V> {
  promise: Promise<V | null>
  /** A matching revocation arrived while the lookup ran: its answer is returned, not cached. */
  stale: boolean
}

/**
 * The validity of access tokens, keyed by digest (hex SHA-256). Valid tokens live `ttlMs`
 * (at most 5 minutes), invalid ones `negativeTtlMs`, in two bounded LRUs so that a flood of
 * unknown tokens cannot evict the valid ones. Revocation notices drop entries by digest, by
 * application, or by user and application. Lookups of one digest are coalesced, and a lookup
 * that a revocation overtook is not cached, so a revoked token is never re-cached as valid.
 */
export class TokenCache<V extends { readonly token: VerifiedToken }> {
  readonly #valid: TtlLru<V>
  readonly #invalid: TtlLru<true>
  readonly #inflight = new Map<string, Lookup<V>>()
  /** Locally announced revocations awaiting their NOTIFY: key → expiry. */
  readonly #pending = new Map<string, number>()
  #cacheNothingUntil = 0
  readonly #ttlMs: number
  readonly #negativeTtlMs: number
  readonly #now: () => number
  readonly #wrap: (token: VerifiedToken) => V
  readonly #lookup: (token: string, digest: string) => Promise<VerifiedToken | undefined>

  constructor(options: TokenCacheOptions<V>) {
    if (!(options.ttlMs > 0 && options.ttlMs <= MAX_TTL_MS)) throw new RangeError('ttlMs must be in (0, 300000]')
    this.#ttlMs = options.ttlMs
    this.#negativeTtlMs = Math.min(options.negativeTtlMs, options.ttlMs)
    this.#now = options.now
    this.#wrap = options.wrap
    this.#lookup = options.lookup
    this.#valid = new TtlLru(options.maxEntries)
    this.#invalid = new TtlLru(Math.max(1000, Math.ceil(options.maxEntries / 10)))
  }

  /** Valid entries held (invalid ones are counted apart). */
  get size(): number {
    return this.#valid.size
  }

  /**
   * The cached answer for a token: its entry, null when known invalid (or not even shaped like
   * a token), undefined when only a lookup can tell. The checksum guards the lookup rather than
   * the cache, so a cache hit costs one SHA-256 and one Map lookup.
   */
  peek(token: string): V | null | undefined {
    if (token.length > MAX_TOKEN_LENGTH) return null
    const hit = this.#cached(sha256Hex(token))
    if (hit !== undefined) return hit
    return isWellFormedAccessToken(token) ? undefined : null
  }

  /** The answer for a token, from the cache or from one lookup shared by every concurrent caller. */
  check(token: string): V | null | Promise<V | null> {
    if (token.length > MAX_TOKEN_LENGTH) return null
    const d = sha256Hex(token)
    const hit = this.#cached(d)
    if (hit !== undefined) return hit
    if (!isWellFormedAccessToken(token)) return null
    return this.#resolve(token, d)
  }

  #cached(digest: string): V | null | undefined {
    const now = this.#now()
    const hit = this.#valid.get(digest, now)
    if (hit !== undefined) return hit
    return this.#invalid.get(digest, now) === undefined ? undefined : null
  }

  #resolve(token: string, digest: string): Promise<V | null> {
    const running = this.#inflight.get(digest)
    if (running !== undefined) return running.promise
    const l: Lookup<V> = { promise: undefined as unknown as Promise<V | null>, stale: false }
    l.promise = this.#lookup(token, digest).then(
      (found) => {
        this.#inflight.delete(digest)
        const now = this.#now()
        // An expiring token (docs/decisions/022-bound-and-expiring-tokens.md) is valid until its
        // expiry by this clock, and its cache entry never outlives it.
        const until = found?.expiresAt == null ? Infinity : found.expiresAt * 1000
        if (found === undefined || until <= now) {
          if (!l.stale) this.#invalid.set(digest, true, now + this.#negativeTtlMs)
          return null
        }
        const entry = this.#wrap(found)
        if (!l.stale && !this.#awaitsConfirmation(digest, found, now)) {
          this.#valid.set(digest, entry, Math.min(now + this.#ttlMs, until))
        }
        return entry
      },
      (err: unknown) => {
        this.#inflight.delete(digest)
        throw err
      },
    )
    this.#inflight.set(digest, l)
    return l.promise
  }

  /** Applies a revocation notice (see NoticeOrigin for `local` versus `notify`). */
  apply(notice: RevocationNotice, origin: NoticeOrigin): void {
    switch (notice.kind) {
      case 'tokens':
        for (const d of notice.digests) {
          this.#valid.delete(d)
          const running = this.#inflight.get(d)
          if (running) running.stale = true
          this.#track(`t:${d}`, origin)
        }
        return
      case 'application-deleted':
      case 'application-suspended':
        this.#dropWhere((t) => t.applicationId === notice.applicationId)
        this.#track(`a:${notice.applicationId}`, origin)
        return
      case 'user-application':
        this.#dropWhere((t) => t.applicationId === notice.applicationId && t.userId === notice.userId)
        this.#track(`u:${notice.userId}:${notice.applicationId}`, origin)
        return
      case 'client-credentials':
        return
    }
  }

  /** Forgets every answer: notices may have been missed (the notification connection was down). */
  clear(): void {
    this.#valid.clear()
    this.#invalid.clear()
    for (const l of this.#inflight.values()) l.stale = true
  }

  #dropWhere(matches: (t: VerifiedToken) => boolean): void {
    this.#valid.deleteWhere((entry) => matches(entry.token))
    // Which token an in-flight lookup will find is not known yet: none of them may be cached.
    for (const l of this.#inflight.values()) l.stale = true
  }

  #track(key: string, origin: NoticeOrigin): void {
    if (origin === 'notify') {
      this.#pending.delete(key)
      return
    }
    const now = this.#now()
    if (this.#pending.size >= MAX_PENDING) {
      for (const [k, expiresAt] of this.#pending) if (expiresAt <= now) this.#pending.delete(k)
      if (this.#pending.size >= MAX_PENDING) {
        this.#pending.clear()
        this.#cacheNothingUntil = now + PENDING_MS
      }
    }
    this.#pending.set(key, now + PENDING_MS)
  }

  /** Whether a revocation announced here but not yet confirmed by its NOTIFY covers this token. */
  #awaitsConfirmation(digest: string, token: VerifiedToken, now: number): boolean {
    if (now < this.#cacheNothingUntil) return true
    if (this.#pending.size === 0) return false
    return (
      this.#pendingAt(`t:${digest}`, now) ||
      (token.applicationId !== null &&
        (this.#pendingAt(`a:${token.applicationId}`, now) || this.#pendingAt(`u:${token.userId}:${token.applicationId}`, now)))
    )
  }

  #pendingAt(key: string, now: number): boolean {
    const expiresAt = this.#pending.get(key)
    if (expiresAt === undefined) return false
    if (expiresAt > now) return true
    this.#pending.delete(key)
    return false
  }
}
