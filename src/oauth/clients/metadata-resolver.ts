import { TtlLru } from '@gatehouse/verifier/shared'
import type { Clock } from '../../lib/clock.js'
import type { ClientMetadata } from './metadata-document.js'
import { type FetchOutcome, type MetadataFetchSettings, fetchClientMetadata } from './metadata-fetch.js'

/*
 * Client metadata documents by URL, fetched at most once per cache lifetime
 * (docs/decisions/026-client-metadata-documents.md "Caching"). A document is reused for its
 * Cache-Control max-age, held between MIN_CACHE_SECONDS and the operator's maximum
 * (CLIENT_ID_METADATA_MAX_CACHE_SECONDS): never refetched on every request however the client's
 * server answers, never trusted past what the operator allows. A refusal is remembered too, for
 * REFUSAL_CACHE_SECONDS, so a hostile client_id cannot make Gatehouse fetch in a loop;
 * concurrent requests for one URL share one fetch, and at most MAX_CONCURRENT_FETCHES run at once,
 * MAX_CONCURRENT_FETCHES_PER_HOST of them for one host name.
 */

/** The shortest reuse of a document, whatever its Cache-Control says (no-store included). */
export const MIN_CACHE_SECONDS = 60
/** The reuse of a document whose response has no Cache-Control max-age (still bounded by the maximum). */
export const DEFAULT_CACHE_SECONDS = 300
/** How long a refusal is remembered before the URL is tried again. */
export const REFUSAL_CACHE_SECONDS = 60
/** URLs remembered per process. */
export const METADATA_CACHE_MAX_ENTRIES = 1_000
/**
 * Documents fetched at once per process: beyond, a request for another URL is refused at once
 * (not remembered, not audited), so a burst of made-up URLs holds at most this many connections.
 */
export const MAX_CONCURRENT_FETCHES = 8
/**
 * Documents fetched at once per process from one host name: a few slow URLs on one host then
 * hold only this many of the MAX_CONCURRENT_FETCHES, and documents on other hosts are still
 * fetched (refused beyond, like the total: not remembered, not audited).
 */
export const MAX_CONCURRENT_FETCHES_PER_HOST = 2

export interface MetadataResolverSettings extends MetadataFetchSettings {
  /** CLIENT_ID_METADATA_MAX_CACHE_SECONDS. */
  readonly maxCacheSeconds: number
}

export type Resolved =
  | { ok: true; metadata: ClientMetadata; fetchedAt: Date; fresh: boolean }
  | { ok: false; reason: string; connected: boolean; fresh: boolean }

type Entry = { ok: true; metadata: ClientMetadata; fetchedAt: Date } | { ok: false; reason: string; connected: boolean }

export class ClientMetadataResolver {
  readonly #lru: TtlLru<Entry>
  readonly #inFlight = new Map<string, Promise<Entry>>()
  /** Fetches under way per host name. */
  readonly #perHost = new Map<string, number>()

  constructor(
    private readonly settings: MetadataResolverSettings,
    private readonly clock: Clock,
    maxEntries = METADATA_CACHE_MAX_ENTRIES,
  ) {
    this.#lru = new TtlLru(maxEntries)
  }

  /**
   * The document at `url`, from the cache when it is still fresh, else fetched. `fresh` says that
   * this call fetched it (the caller records a fetch or a refusal once, not per request).
   */
  async resolve(url: string): Promise<Resolved> {
    const cached = this.#lru.get(url, this.clock().getTime())
    if (cached !== undefined) return { ...cached, fresh: false }
    let pending = this.#inFlight.get(url)
    if (pending !== undefined) return { ...(await pending), fresh: false }
    if (this.#inFlight.size >= MAX_CONCURRENT_FETCHES) {
      return { ok: false, reason: 'too many client documents are being fetched at once; try again shortly', connected: false, fresh: false }
    }
    const host = URL.canParse(url) ? new URL(url).hostname : url
    const onHost = this.#perHost.get(host) ?? 0
    if (onHost >= MAX_CONCURRENT_FETCHES_PER_HOST) {
      const reason = 'too many client documents are being fetched from this host at once; try again shortly'
      return { ok: false, reason, connected: false, fresh: false }
    }
    this.#perHost.set(host, onHost + 1)
    pending = this.#fetch(url).finally(() => {
      this.#inFlight.delete(url)
      const left = (this.#perHost.get(host) ?? 1) - 1
      if (left === 0) this.#perHost.delete(host)
      else this.#perHost.set(host, left)
    })
    this.#inFlight.set(url, pending)
    return { ...(await pending), fresh: true }
  }

  async #fetch(url: string): Promise<Entry> {
    const outcome: FetchOutcome = await fetchClientMetadata(url, this.settings)
    const now = this.clock()
    if (!outcome.ok) {
      const entry = { ok: false as const, reason: outcome.reason, connected: outcome.connected }
      this.#lru.set(url, entry, now.getTime() + REFUSAL_CACHE_SECONDS * 1000)
      return entry
    }
    const seconds = Math.min(this.settings.maxCacheSeconds, Math.max(MIN_CACHE_SECONDS, outcome.maxAgeSeconds ?? DEFAULT_CACHE_SECONDS))
    const entry = { ok: true as const, metadata: outcome.metadata, fetchedAt: now }
    this.#lru.set(url, entry, now.getTime() + seconds * 1000)
    return entry
  }
}
