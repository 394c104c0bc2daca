import { scopeSatisfies } from './scope.js'
import { SEED_SCOPES, type ScopeCatalogue, definedScopes, readScopesFile, scopeCheck } from './scope-catalogue.js'
import { BearerChallenges, DpopChallenges, bearerToken, dpopToken } from './bearer.js'
import { CoarseClock } from './coarse-clock.js'
import { type DatabaseOption, databaseSource } from './database-source.js'
import { DEFAULT_DPOP_MAX_AGE_SECONDS } from './dpop.js'
import { MemoryReplayCache, checkPresentation, requestUrl } from './presentation.js'
import { introspectionSource } from './introspection-source.js'
import { type ResourceMetadata, type ResourceMetadataOptions, audienceCheck, issuerOf, resourceMetadata } from './resource-metadata.js'
import type { NoticeSink, TokenSource } from './source.js'
import { DEFAULT_MAX_ENTRIES, DEFAULT_NEGATIVE_TTL_MS, DEFAULT_TTL_MS, MAX_TTL_MS, TokenCache } from './token-cache.js'
import type { ResourceRequest, VerifiedToken, VerifyResult } from './types.js'

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
  /**
   * The origin clients address this API at (`https://api.example.com`), for DPoP proofs' `htu`
   * (RFC 9449 §4.3 step 9). Set it behind a proxy or load balancer; without it the adapters take
   * the origin from the request's Host header and protocol, which a client may choose.
   */
  publicOrigin?: string
  /** How far a DPoP proof's `iat` may be from now, either side (RFC 9449 §11.1), default 60 s. */
  dpopMaxAgeSeconds?: number
  /** DPoP proofs remembered against replay (least recently used go first when full), default 100,000. */
  dpopReplayCacheEntries?: number
  /**
   * This API's resource identifier (RFC 8707 §2): an https URL without query or fragment,
   * exactly as declared for the resource server in Gatehouse (`http://localhost…` and
   * `http://127.0.0.1…` are allowed for development). With it, a token whose audience does not
   * name it is refused (401 invalid_token), the adapters serve protected-resource metadata
   * (RFC 9728), and every challenge names that metadata (§5.1). Without it, only tokens without
   * an audience are accepted: a token minted for any resource is refused.
   */
  resource?: string
  /**
   * The authorization server the metadata names (RFC 9728 `authorization_servers`): Gatehouse's
   * issuer, its PUBLIC_URL. Default in introspection mode: `introspectionUrl` without
   * `/oauth/introspect`; required with `resource` in database mode.
   */
  issuer?: string
  /** What the metadata document says besides the resource and its authorization server. */
  resourceMetadata?: ResourceMetadataOptions
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
   * Checks a request's credentials: `Authorization: Bearer` for a token that is not bound, or
   * `Authorization: DPoP` with one `DPoP` proof for this method and URL signed by the key the
   * token is bound to (RFC 9449 §7.1), once only. Bearer challenges also offer DPoP. The adapters
   * call this; `verify` stays for callers that accept Bearer only.
   */
  verifyRequest(request: ResourceRequest, requiredScope?: string): Promise<VerifyResult>
  /**
   * `verifyRequest`'s answer when it needs no lookup and no proof (a cached Bearer token, or no
   * credentials), synchronously and allocating nothing; else undefined.
   */
  verifyRequestCached(
    authorization: string | undefined,
    dpop: string | readonly string[] | undefined,
    requiredScope?: string,
  ): VerifyResult | undefined
  /**
   * Throws when `scopes` was given and does not define `scope`: a route that requires a scope
   * nobody can be granted is a mistake to find at start-up. The adapters call it for each route.
   */
  assertKnownScope(scope: string | undefined): void
  /** The `resource` option: the audience a token must name, when it names one. */
  readonly resource: string | undefined
  /**
   * RFC 9728: the metadata document, its URL and the paths the adapters serve it at; undefined
   * without `resource`.
   */
  readonly resourceMetadata: ResourceMetadata | undefined
  readonly notifications: NotificationState
  /** Resolves once revocation notices flow (at once when there is no stream). */
  ready(): Promise<void>
  close(): Promise<void>
}

interface Entry {
  readonly token: VerifiedToken
  readonly result: VerifyResult
  /**
   * RFC 8707: the token names an audience, and not this verifier's resource. Judged once, when
   * the entry is made, so that a cached check of it is one boolean, for any token.
   */
  readonly forAnotherResource: boolean
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
  // Options are checked before anything is opened: a bad one throws with nothing to close.
  const catalogue = typeof options.scopes === 'string' ? readScopesFile(options.scopes) : options.scopes
  const resource = options.resource
  const metadata = resource === undefined ? undefined : metadataOf(options, resource, catalogue)
  const onError = options.onError ?? (() => {})
  const coarse = options.now ? undefined : new CoarseClock()
  const now = options.now ?? coarse!.now
  const realm = options.realm ?? 'gatehouse'
  const cache = entryCache(options, coarse, audienceCheck(resource), (token, d) => source.lookup(token, d))
  const notifications = new Notifications()
  const source = tokenSource(options, notifications.sinkFor(cache, onError))
  if (!source.notifies) notifications.none()

  const satisfies = catalogue === undefined ? scopeSatisfies : scopeCheck(catalogue)
  const defined = catalogue === undefined ? undefined : definedScopes(catalogue)

  /**
   * A Bearer presentation: refused for a token minted for other resources (RFC 8707; judged when
   * its entry was made, so this costs one boolean, with or without an audience), for a token
   * bound to a key (RFC 9449 §7.2), else by scope.
   */
  const decide = (entry: Entry | null, requiredScope: string | undefined, challenges: BearerChallenges): VerifyResult => {
    if (entry === null) return challenges.invalid
    if (entry.forAnotherResource) return challenges.otherResource
    if (entry.token.jkt !== null) return challenges.boundAsBearer
    if (requiredScope === undefined || satisfies(entry.token.scopes, requiredScope)) return entry.result
    return challenges.forbidden(requiredScope)
  }
  const bearerOnly = new BearerChallenges(realm, false, metadata?.url)
  const bearer = bearerVerification(cache, decide, bearerOnly, onError)
  const request = requestVerification(options, {
    cache,
    decide,
    satisfies,
    now,
    onError,
    bearer: new BearerChallenges(realm, true, metadata?.url),
    dpop: new DpopChallenges(metadata?.url),
  })

  return {
    assertKnownScope(scope) {
      if (scope === undefined || defined === undefined || defined.has(scope)) return
      throw new RangeError(`Unknown scope "${scope}": the scopes file does not define it`)
    },
    verifyCached(authorization, requiredScope) {
      const token = bearerToken(authorization)
      if (token === undefined) return bearerOnly.missing
      const entry = cache.peek(token)
      return entry === undefined ? undefined : decide(entry, requiredScope, bearerOnly)
    },
    verify: (authorization, requiredScope) => bearer(bearerToken(authorization), requiredScope),
    verifyRequestCached: request.cached,
    verifyRequest: request.verify,
    resource,
    resourceMetadata: metadata,
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

type Decide = (entry: Entry | null, requiredScope: string | undefined, challenges: BearerChallenges) => VerifyResult

/** The Bearer check, answered with `challenges`: a lookup when the cache cannot tell, 503 when the lookup fails. */
function bearerVerification(cache: TokenCache<Entry>, decide: Decide, challenges: BearerChallenges, onError: (error: Error) => void) {
  return async (token: string | undefined, requiredScope: string | undefined): Promise<VerifyResult> => {
    if (token === undefined) return challenges.missing
    try {
      return decide(await cache.check(token), requiredScope, challenges)
    } catch (err) {
      onError(err instanceof Error ? err : new Error(String(err)))
      return challenges.unavailable
    }
  }
}

interface RequestDeps {
  cache: TokenCache<Entry>
  decide: Decide
  satisfies: (granted: readonly string[], required: string) => boolean
  /** Milliseconds. */
  now: () => number
  onError: (error: Error) => void
  /** Bearer challenges that also offer DPoP (RFC 9449 §7.1). */
  bearer: BearerChallenges
  dpop: DpopChallenges
}

/**
 * The request-level check: Bearer as `verify` does but with DPoP offered in its challenges, and
 * DPoP (RFC 9449 §7.1). A token that is not bound, presented with the DPoP scheme, is refused
 * (invalid_token): the scheme claims a binding the token does not have, and §7.1's check that
 * the proof's key is the token's cannot be made; a client sends such a token as Bearer (§7.2).
 */
function requestVerification(options: CommonVerifierOptions, deps: RequestDeps) {
  const { cache, decide, satisfies, now, bearer, dpop } = deps
  const maxAgeSeconds = options.dpopMaxAgeSeconds ?? DEFAULT_DPOP_MAX_AGE_SECONDS
  if (!(maxAgeSeconds > 0)) throw new RangeError('dpopMaxAgeSeconds must be positive')
  const replay = new MemoryReplayCache(options.dpopReplayCacheEntries ?? DEFAULT_MAX_ENTRIES, now)
  const publicOrigin = options.publicOrigin?.replace(/\/+$/, '')
  const bearerCheck = bearerVerification(cache, decide, bearer, deps.onError)

  const checkDpop = async (token: string, request: ResourceRequest, requiredScope: string | undefined): Promise<VerifyResult> => {
    const entry = await cache.check(token)
    if (entry === null) return dpop.invalid
    // Before the proof: a token for another resource is refused whoever holds its key.
    if (entry.forAnotherResource) return dpop.otherResource
    const url = requestUrl(request.url, publicOrigin, request.origin)
    const proofCheck = { method: request.method, url, now: Math.floor(now() / 1000), maxAgeSeconds }
    const refused = await checkPresentation(dpop, entry.token, token, request.dpop, proofCheck, replay)
    if (refused !== undefined) return refused
    if (requiredScope === undefined || satisfies(entry.token.scopes, requiredScope)) return entry.result
    return dpop.forbidden(requiredScope)
  }

  return {
    cached(authorization: string | undefined, proof: string | readonly string[] | undefined, requiredScope?: string) {
      if (proof !== undefined) return undefined
      const token = bearerToken(authorization)
      if (token === undefined) return dpopToken(authorization) === undefined ? bearer.missing : undefined
      const entry = cache.peek(token)
      return entry === undefined ? undefined : decide(entry, requiredScope, bearer)
    },
    async verify(request: ResourceRequest, requiredScope?: string): Promise<VerifyResult> {
      const token = dpopToken(request.authorization)
      if (token === undefined) return bearerCheck(bearerToken(request.authorization), requiredScope)
      try {
        return await checkDpop(token, request, requiredScope)
      } catch (err) {
        deps.onError(err instanceof Error ? err : new Error(String(err)))
        return bearer.unavailable
      }
    },
  }
}

/** The verifier's cache of answers, bounded by the options' TTLs and size. */
function entryCache(
  options: VerifierOptions,
  coarse: CoarseClock | undefined,
  forAnotherResource: (audience: readonly string[] | null) => boolean,
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
    wrap: (token) => ({
      token,
      result: Object.freeze({ ok: true, token: Object.freeze(token) }),
      forAnotherResource: forAnotherResource(token.audience),
    }),
    lookup,
  })
}

/** The verifier's RFC 9728 metadata: its `resource`, issuer and scopes checked, or a RangeError. */
function metadataOf(options: VerifierOptions, resource: string, catalogue: ScopeCatalogue | undefined): ResourceMetadata {
  const issuer = issuerOf(options.issuer, options.mode === 'introspection' ? options.introspectionUrl : undefined)
  const scopes = (catalogue ?? SEED_SCOPES).scopes.map((s) => s.name)
  return resourceMetadata(resource, issuer, scopes, options.resourceMetadata)
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
