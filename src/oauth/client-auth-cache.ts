import type { Db } from '../db/connect.js'
import type { Clock } from '../lib/clock.js'
import { constantTimeEqual } from '../lib/crypto.js'
import { digest } from '../lib/tokens.js'
import { findApplicationByClientId } from '../repositories/applications.js'
import { type RevocationNotice, TtlLru } from '@gatehouse/verifier/shared'
import { type ClientCredentials, clientAuthFailure, suspendedClient } from './client-auth.js'

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

const MAX_CLIENT_ID_LENGTH = 256

/**
 * Client authentication for the resource-server endpoints (introspection, the revocation
 * stream), where a resource server authenticates on every request: client_id → secret digest
 * is cached like token validity, so a cached introspection runs no query at all. Entries go
 * when the application is deleted (`app:` notice) or its secret regenerated (`client:`
 * notice), and live no longer than the token cache's TTL. A secret that does not match the
 * cached digest is checked against the database before it is refused, so a new secret works
 * at once; failures go through the token endpoint's rate limit.
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
    const secretHash = digest(creds.clientSecret)
    const cached = this.#cache.get(creds.clientId, clock().getTime())
    if (cached !== undefined && constantTimeEqual(secretHash, cached.secretHash)) return cached

    const generation = this.#generation
    const app = creds.clientId.length <= MAX_CLIENT_ID_LENGTH ? await findApplicationByClientId(db, creds.clientId) : undefined
    // A suspended application authenticates nowhere, and is not cached (README "Operating Gatehouse").
    if (app === undefined || app.suspended_at !== null) {
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
    if (app !== undefined && constantTimeEqual(secretHash, app.secret_hash)) {
      if (app.suspended_at !== null) throw suspendedClient(creds)
      return { applicationId: app.id, clientId: app.client_id, isResourceServer: app.is_resource_server }
    }
    throw await clientAuthFailure(db, clock, creds, app !== undefined, this.options.failureLimit)
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
