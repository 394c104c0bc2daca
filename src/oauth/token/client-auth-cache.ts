import type { Db } from '../../db/connect.js'
import type { Clock } from '../../lib/clock.js'
import { constantTimeEqual, sha256Hex } from '../../lib/crypto.js'
import { type RevocationNotice, TtlLru } from '@gatehouse/verifier/shared'
import { type ClientCredentials, assertConfidential, findClient, verifyClient } from './client-auth.js'

export interface AuthenticatedClient {
  readonly applicationId: string
  readonly clientId: string
  /** Marked by an operator: may introspect any token and subscribe to the revocation stream. */
  readonly isResourceServer: boolean
}

interface CachedClient extends AuthenticatedClient {
  readonly secretHash: string
}

export interface ClientAuthCacheOptions {
  db: Db
  clock: Clock
  ttlMs: number
  maxEntries: number
  failureLimit: number
}

/**
 * Client authentication for the resource-server endpoints (introspection, the revocation
 * stream), where a resource server authenticates on every request: client_id → secret digest
 * is cached like token validity, so a cached introspection runs no query at all. Entries go
 * when the application is deleted or suspended (`app-deleted:`, `app-suspended:` notices) or
 * its secret regenerated (`client:` notice), and live no longer than the token cache's TTL. A
 * secret that does not match the cached digest is read from the database and checked by
 * verifyClient, as at the token endpoint, before it is refused, so a new secret works at once.
 */
export class ClientAuthCache {
  readonly #cache: TtlLru<CachedClient>
  /** Bumped by every notice: a read that a notice overtook is not cached. */
  #generation = 0

  constructor(private readonly options: ClientAuthCacheOptions) {
    this.#cache = new TtlLru(options.maxEntries)
  }

  async authenticate(creds: ClientCredentials): Promise<AuthenticatedClient> {
    const { db, clock } = this.options
    assertConfidential(creds)
    const secretHash = sha256Hex(creds.clientSecret)
    const cached = this.#cache.get(creds.clientId, clock().getTime())
    if (cached !== undefined && constantTimeEqual(secretHash, cached.secretHash)) return cached

    const generation = this.#generation
    // Confidential clients only (introspection, the revocation stream): never a metadata document's, which has no secret.
    const app = await findClient(db, creds.clientId, undefined)
    // A suspended application authenticates nowhere, and is not cached (docs/operating/admin.md).
    if (app === undefined || app.suspended_at !== null || app.secret_hash === null) {
      this.#cache.delete(creds.clientId)
    } else if (generation === this.#generation) {
      const fresh: CachedClient = {
        applicationId: app.id,
        clientId: app.client_id,
        isResourceServer: app.is_resource_server,
        secretHash: app.secret_hash,
      }
      this.#cache.set(creds.clientId, fresh, clock().getTime() + this.options.ttlMs)
    }
    const verified = await verifyClient(db, clock, creds, app, this.options.failureLimit)
    return { applicationId: verified.id, clientId: verified.client_id, isResourceServer: verified.is_resource_server }
  }

  apply(notice: RevocationNotice): void {
    if (notice.kind === 'client-credentials') {
      this.#generation++
      this.#cache.delete(notice.clientId)
    } else if (notice.kind === 'application-deleted' || notice.kind === 'application-suspended') {
      this.#generation++
      this.#cache.deleteWhere((c) => c.applicationId === notice.applicationId)
    }
  }

  clear(): void {
    this.#generation++
    this.#cache.clear()
  }
}
