import { scopeSatisfies } from './scope.js'
import { type ScopeCatalogue, definedScopes, readScopesFile, scopeCheck } from './scope-catalogue.js'
import { BearerChallenges, bearerToken } from './bearer.js'
import { CoarseClock } from './coarse-clock.js'
import { type DatabaseOption, databaseSource } from './database-source.js'
import { introspectionSource } from './introspection-source.js'
import type { NoticeSink, TokenSource } from './source.js'
import { DEFAULT_MAX_ENTRIES, DEFAULT_NEGATIVE_TTL_MS, DEFAULT_TTL_MS, MAX_TTL_MS, TokenCache } from './token-cache.js'
import type { VerifiedToken, VerifyResult } from './types.js'

export interface CommonVerifierOptions {
  /** How long a valid token is trusted without asking again: at most 300 s (docs/decisions/004-caching-and-ttl-bounds.md), default 60. */
  cacheTtlSeconds?: number
  /** How long an unknown or revoked token is remembered, default 5 s. */
  negativeCacheTtlSeconds?: number
  /** Valid tokens held at most (least recently used go first), default 100,000. */
  maxEntries?: number
  /** The realm of the WWW-Authenticate challenges, default "gatehouse". */
  realm?: string
  /** Milliseconds since the epoch; tests inject a clock they move by hand. */
  now?: () => number
  /** Told of lookups that failed and of a lost notification connection. */
  onError?: (error: Error) => void
  /**
   * The scopes the API defines: the path of the scopes file Gatehouse reads (SCOPES_FILE), or the
   * list `readScopesFile` returns. A required scope must be one of them, and a scope the file no
   * longer defines grants nothing. Unset: Gatehouse's built-in scopes, `write` covering `write_*`.
   */
  scopes?: ScopeCatalogue | string
}

export interface DatabaseVerifierOptions extends CommonVerifierOptions {
  /** For services that share Gatehouse's Postgres: lookups by SQL, revocations by LISTEN. */
  mode: 'database'
  /** A postgres:// URL (the verifier opens and closes its own connections) or an open handle. */
  database: DatabaseOption
}

export interface IntrospectionVerifierOptions extends CommonVerifierOptions {
  /** For a separate service: lookups by POST /oauth/introspect as a registered client. */
  mode: 'introspection'
  introspectionUrl: string
  clientId: string
  clientSecret: string
  /**
   * GET /oauth/revocations/stream: revocations arrive within a second. Without it a revoked
   * token stays accepted until its cache entry expires, so keep cacheTtlSeconds short.
   */
  revocationStreamUrl?: string
  /** Per introspection request, default 5000. */
  timeoutMs?: number
  /** Silence after which the stream counts as dead, default 45000 (the server pings every 15 s). */
  streamIdleTimeoutMs?: number
}

export type VerifierOptions = DatabaseVerifierOptions | IntrospectionVerifierOptions

/**
 * `connected`: revocations reach the cache within a second. `disconnected`: the notification
 * connection is down and being re-established; meanwhile no answer outlives the cache TTL, and
 * the cache is emptied when it is back. `none`: introspection without a stream (TTL only).
 */
export type NotificationState = 'connected' | 'disconnected' | 'none'

export interface Verifier {
  /**
   * Checks the Authorization header of a request (nothing else: `?access_token=` is ignored,
   * RFC 6750 2.3) and, when given, the scope the route requires (without the `scopes` option,
   * `write` satisfies `write_*`; with it, the token's own scopes only).
   */
  verify(authorization: string | undefined, requiredScope?: string): Promise<VerifyResult>
  /** The same answer when it needs no lookup (synchronously, allocating nothing); else undefined. */
  verifyCached(authorization: string | undefined, requiredScope?: string): VerifyResult | undefined
  /**
   * Throws when `scopes` was given and does not define `scope`: a route that requires a scope
   * nobody can be granted is a mistake to find at start-up. The adapters call it for each route.
   */
  assertKnownScope(scope: string | undefined): void
  readonly notifications: NotificationState
  /** Resolves once revocation notices flow (at once when there is no stream). */
  ready(): Promise<void>
  close(): Promise<void>
}

interface Entry {
  readonly token: VerifiedToken
  readonly result: VerifyResult
}

function seconds(value: number | undefined, fallbackMs: number, name: string, maxMs = Infinity): number {
  if (value === undefined) return fallbackMs
  const ms = value * 1000
  if (!(ms > 0 && ms <= maxMs)) throw new RangeError(`${name} must be positive${maxMs < Infinity ? ` and at most ${maxMs / 1000}` : ''}`)
  return ms
}

/** Whether the token grants the scope under the built-in scopes: `write` implies every `write_*` (see scope.ts). */
export function hasScope(token: VerifiedToken, scope: string): boolean {
  return scopeSatisfies(token.scopes, scope)
}

export function createVerifier(options: VerifierOptions): Verifier {
  const onError = options.onError ?? (() => {})
  const coarse = options.now ? undefined : new CoarseClock()
  const challenges = new BearerChallenges(options.realm ?? 'gatehouse')
  const cache = entryCache(options, coarse, (token, d) => source.lookup(token, d))
  const notifications = new Notifications()
  const source = tokenSource(options, notifications.sinkFor(cache, onError))
  if (!source.notifies) notifications.none()

  const catalogue = typeof options.scopes === 'string' ? readScopesFile(options.scopes) : options.scopes
  const satisfies = catalogue === undefined ? scopeSatisfies : scopeCheck(catalogue)
  const defined = catalogue === undefined ? undefined : definedScopes(catalogue)

  const decide = (entry: Entry | null, requiredScope: string | undefined): VerifyResult => {
    if (entry === null) return challenges.invalid
    if (requiredScope === undefined || satisfies(entry.token.scopes, requiredScope)) return entry.result
    return challenges.forbidden(requiredScope)
  }

  return {
    assertKnownScope(scope) {
      if (scope === undefined || defined === undefined || defined.has(scope)) return
      throw new RangeError(`Unknown scope "${scope}": the scopes file does not define it`)
    },
    verifyCached(authorization, requiredScope) {
      const token = bearerToken(authorization)
      if (token === undefined) return challenges.missing
      const entry = cache.peek(token)
      return entry === undefined ? undefined : decide(entry, requiredScope)
    },
    async verify(authorization, requiredScope) {
      const token = bearerToken(authorization)
      if (token === undefined) return challenges.missing
      try {
        return decide(await cache.check(token), requiredScope)
      } catch (err) {
        onError(err instanceof Error ? err : new Error(String(err)))
        return challenges.unavailable
      }
    },
    get notifications() {
      return notifications.state
    },
    ready: () => notifications.ready,
    async close() {
      coarse?.stop()
      await source.close()
    },
  }
}

/** The verifier's cache of answers, bounded by the options' TTLs and size. */
function entryCache(
  options: VerifierOptions,
  coarse: CoarseClock | undefined,
  lookup: (token: string, digest: string) => Promise<VerifiedToken | undefined>,
): TokenCache<Entry> {
  const ttlMs = seconds(options.cacheTtlSeconds, DEFAULT_TTL_MS, 'cacheTtlSeconds', MAX_TTL_MS)
  const negativeTtlMs = seconds(options.negativeCacheTtlSeconds, DEFAULT_NEGATIVE_TTL_MS, 'negativeCacheTtlSeconds', MAX_TTL_MS)
  return new TokenCache<Entry>({
    maxEntries: options.maxEntries ?? DEFAULT_MAX_ENTRIES,
    // A coarse clock lags by up to one tick: shorten the TTL so no answer outlives it.
    ttlMs: coarse ? Math.max(1, ttlMs - coarse.tickMs) : ttlMs,
    negativeTtlMs,
    now: options.now ?? coarse!.now,
    wrap: (token) => ({ token, result: Object.freeze({ ok: true, token: Object.freeze(token) }) }),
    lookup,
  })
}

/** Where tokens are looked up and revocation notices come from: the database, or Gatehouse's HTTP endpoints. */
function tokenSource(options: VerifierOptions, sink: NoticeSink): TokenSource {
  if (options.mode === 'database') return databaseSource(options.database, sink)
  return introspectionSource(
    {
      introspectionUrl: options.introspectionUrl,
      clientId: options.clientId,
      clientSecret: options.clientSecret,
      revocationStreamUrl: options.revocationStreamUrl,
      timeoutMs: options.timeoutMs ?? 5000,
      streamIdleTimeoutMs: options.streamIdleTimeoutMs ?? 45_000,
    },
    sink,
  )
}

/** The state of the revocation notices' connection, and what the cache does as it changes. */
class Notifications {
  state: NotificationState = 'disconnected'
  readonly ready: Promise<void>
  #markReady!: () => void

  constructor() {
    this.ready = new Promise<void>((resolve) => (this.#markReady = resolve))
  }

  /** The source sends no notices: the cache's TTL is the only bound, and the verifier is ready at once. */
  none(): void {
    this.state = 'none'
    this.#markReady()
  }

  sinkFor(cache: TokenCache<Entry>, onError: (err: Error) => void): NoticeSink {
    return {
      apply: (notice, origin) => cache.apply(notice, origin),
      reset: () => cache.clear(),
      connected: () => {
        // Notices may have been missed while no connection was up: forget every answer.
        cache.clear()
        this.state = 'connected'
        this.#markReady()
      },
      disconnected: (err) => {
        this.state = 'disconnected'
        onError(err ?? new Error('revocation notifications disconnected'))
      },
    }
  }
}
