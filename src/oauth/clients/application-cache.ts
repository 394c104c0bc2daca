import { type RevocationNotice, TtlLru } from '@gatehouse/verifier/shared'
import type { Db } from '../../db/connect.js'
import type { Clock } from '../../lib/clock.js'
import { listSpaRedirectUris } from '../../repositories/applications.js'
import type { RevocationReceiver } from '../../revocation/bus.js'
import type { AuthorizeApplication } from '../authorize/authorize-request.js'

export const APPLICATION_CACHE_TTL_MS = 5_000
export const APPLICATION_CACHE_MAX_ENTRIES = 1_000

/**
 * Applications by client_id for GET /oauth/authorize with remembered consent, so that path
 * costs the session lookup and one statement (docs/decisions/004-caching-and-ttl-bounds.md). A
 * cached copy is only ever used to issue a code through `insertCodeUnderGrant`, which re-checks
 * the settings in the same statement; every other answer comes from a fresh read through the
 * ClientDirectory (client-directory.ts), which tells this cache what it found. So an edit in any
 * process takes effect at once, and the bus drops deleted applications. This cache only keeps
 * what it is told: it reads no application and knows nothing of metadata documents.
 */
export class ApplicationCache implements RevocationReceiver {
  readonly #lru: TtlLru<AuthorizeApplication>
  /** The origins of single-page apps' redirect URIs, and until when they may be used. */
  #spaOrigins: { origins: ReadonlySet<string>; until: number } | undefined
  #loadingOrigins: Promise<ReadonlySet<string>> | undefined

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly ttlMs = APPLICATION_CACHE_TTL_MS,
    maxEntries = APPLICATION_CACHE_MAX_ENTRIES,
  ) {
    this.#lru = new TtlLru(maxEntries)
  }

  /** The cached copy, if any and not expired. */
  get(clientId: string): AuthorizeApplication | undefined {
    return this.#lru.get(clientId, this.clock().getTime())
  }

  /** Keeps `app`, as just read, for this cache's lifetime. */
  remember(clientId: string, app: AuthorizeApplication): void {
    this.#lru.set(clientId, app, this.clock().getTime() + this.ttlMs)
  }

  /** Drops any copy: a fresh read found no application, or none that may be used, under this client_id. */
  forget(clientId: string): void {
    this.#lru.delete(clientId)
  }

  /**
   * Whether `origin` (the Origin header, RFC 6454) is a registered single-page app's: the CORS
   * allow-list of the token and revocation endpoints (docs/decisions/019-public-clients-and-consent.md).
   * The list is read whole, at most once per lifetime of this cache and only when a browser asks,
   * so a new single-page app's origin works everywhere within that lifetime and a deleted or
   * suspended one's stops at once (apply). Concurrent callers share one read.
   */
  async allowsBrowserOrigin(origin: string): Promise<boolean> {
    const now = this.clock().getTime()
    const current = this.#spaOrigins
    if (current !== undefined && now < current.until) return current.origins.has(origin)
    this.#loadingOrigins ??= this.#loadOrigins(now).finally(() => {
      this.#loadingOrigins = undefined
    })
    return (await this.#loadingOrigins).has(origin)
  }

  async #loadOrigins(now: number): Promise<ReadonlySet<string>> {
    const origins = new Set((await listSpaRedirectUris(this.db)).flatMap((uri) => originOf(uri)))
    this.#spaOrigins = { origins, until: now + this.ttlMs }
    return origins
  }

  /** A deleted or suspended application goes at once; credentials are never read from this cache. */
  apply(notice: RevocationNotice): void {
    if (notice.kind === 'application-deleted' || notice.kind === 'application-suspended') {
      this.#lru.deleteWhere((app) => app.id === notice.applicationId)
      this.#spaOrigins = undefined
    }
  }

  clear(): void {
    this.#lru.clear()
    this.#spaOrigins = undefined
  }
}

/** The origin a browser sends for pages under `uri` (WHATWG URL's origin serialisation), or none. */
function originOf(uri: string): string[] {
  if (!URL.canParse(uri)) return []
  const { origin } = new URL(uri)
  return origin === 'null' ? [] : [origin]
}
