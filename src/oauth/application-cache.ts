import type { Db } from '../db/connect.js'
import type { Clock } from '../lib/clock.js'
import { findApplicationWithOwnerByClientId } from '../repositories/applications.js'
import type { AuthorizeApplication } from './authorize-request.js'

export const APPLICATION_CACHE_TTL_MS = 5_000
export const APPLICATION_CACHE_MAX_ENTRIES = 1_000

/**
 * Applications by client_id for GET /oauth/authorize with remembered consent, so that path
 * costs the session lookup and one statement. A cached copy is only ever used to issue a code
 * through `insertCodeUnderGrant`, which re-checks the settings in the same statement; every
 * other answer comes from `load`. So an edit or deletion in any process takes effect at once
 * without notices, and the short TTL and the bound only limit memory and wasted statements.
 */
export class ApplicationCache {
  /** Insertion order is age: the first key is evicted first. */
  readonly #entries = new Map<string, { app: AuthorizeApplication; expiresAt: number }>()

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly ttlMs = APPLICATION_CACHE_TTL_MS,
    private readonly maxEntries = APPLICATION_CACHE_MAX_ENTRIES,
  ) {}

  /** The cached copy, if any and not expired. */
  get(clientId: string): AuthorizeApplication | undefined {
    const entry = this.#entries.get(clientId)
    if (entry === undefined) return undefined
    if (entry.expiresAt <= this.clock().getTime()) {
      this.#entries.delete(clientId)
      return undefined
    }
    return entry.app
  }

  /** Reads the application from the database, remembering it (or forgetting it when gone). */
  async load(clientId: string): Promise<AuthorizeApplication | undefined> {
    const app = await findApplicationWithOwnerByClientId(this.db, clientId)
    this.#entries.delete(clientId)
    if (app !== undefined) {
      if (this.#entries.size >= this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!)
      this.#entries.set(clientId, { app, expiresAt: this.clock().getTime() + this.ttlMs })
    }
    return app
  }
}
