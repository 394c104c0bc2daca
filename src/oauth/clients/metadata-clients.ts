import { type AuditLog, auditDetail } from '../../audit/audit-log.js'
import type { Db } from '../../db/connect.js'
import type { Application } from '../../db/schema.js'
import type { Clock } from '../../lib/clock.js'
import { findApplicationWithOwnerByClientId } from '../../repositories/applications.js'
import { countMetadataClients, metadataClientExists, upsertMetadataClient } from '../../repositories/metadata-clients.js'
import type { AuthorizeApplication } from '../authorize/authorize-request.js'
import type { ClientMetadata } from './metadata-document.js'
import type { ClientMetadataResolver, MetadataResolverSettings } from './metadata-resolver.js'

/*
 * Clients that identify with a Client ID Metadata Document, as applications rows
 * (docs/decisions/026-client-metadata-documents.md): the document, fetched through the
 * resolver's cache, is written to the client's row whenever it is fetched again, so the row's
 * redirect URIs are always the ones the document last listed; the row is what grants, tokens,
 * suspension and revocation hang from, exactly as for a registered application.
 */

/** Refusals recorded in the audit log per process and minute at most: a stream of made-up URLs must not flood it. */
export const REFUSALS_AUDITED_PER_MINUTE = 30

/** Every CLIENT_ID_METADATA_* setting, as src/config.ts builds them (docs/operating/configuration.md). */
export interface ClientMetadataSettings extends MetadataResolverSettings {
  /** CLIENT_ID_METADATA_MAX_CLIENTS: stored clients at most; a new one beyond is refused. */
  readonly maxClients: number
  /** CLIENT_ID_METADATA_UNUSED_DAYS: a client not fetched for this long and holding no grant is deleted by the janitor. */
  readonly unusedDays: number
}

export interface MetadataClientsDeps {
  db: Db
  clock: Clock
  audit: AuditLog
  resolver: ClientMetadataResolver
  /** What such a client may ask for: the scope vocabulary's names. */
  scopes: readonly string[]
  /** CLIENT_ID_METADATA_MAX_CLIENTS: a new client beyond this many is refused. */
  maxClients: number
}

export class MetadataClients {
  #refusalWindow = { start: 0, count: 0 }

  constructor(private readonly deps: MetadataClientsDeps) {}

  /**
   * The application of the document at `url`, stored or refreshed; undefined when the document is
   * refused, the operator's bound is reached or a registered application has the client_id.
   */
  async load(url: string): Promise<AuthorizeApplication | undefined> {
    const { db } = this.deps
    const resolved = await this.deps.resolver.resolve(url)
    if (!resolved.ok) {
      if (resolved.fresh) await this.#refused(url, resolved.reason)
      return undefined
    }
    if (!resolved.fresh) {
      const stored = await findApplicationWithOwnerByClientId(db, url)
      // A cached document whose row the janitor removed since is stored again below.
      if (stored !== undefined) return stored.metadata_fetched_at === null ? undefined : stored
    }
    if (!(await metadataClientExists(db, url)) && (await countMetadataClients(db)) >= this.deps.maxClients) {
      await this.#refused(url, `this server holds its maximum of ${this.deps.maxClients} clients without registration`)
      return undefined
    }
    const row = await upsertMetadataClient(db, rowOf(resolved.metadata, this.deps.scopes, resolved.fetchedAt))
    if (row === undefined) return undefined
    if (resolved.fresh) {
      await this.deps.audit.record(
        {
          event: 'client.metadata_fetched',
          userId: null,
          application: { clientId: url, name: row.name },
          detail: auditDetail.metadataFetched(row.redirect_uris),
        },
        null,
        null,
      )
    }
    return withoutOwner(row)
  }

  async #refused(url: string, reason: string): Promise<void> {
    const now = this.deps.clock().getTime()
    const window = this.#refusalWindow
    if (now - window.start >= 60_000) this.#refusalWindow = { start: now, count: 0 }
    if (++this.#refusalWindow.count > REFUSALS_AUDITED_PER_MINUTE) return
    await this.deps.audit.record(
      {
        event: 'client.metadata_refused',
        userId: null,
        application: { clientId: url, name: hostOf(url) },
        detail: auditDetail.metadataRefused(reason),
      },
      null,
      null,
    )
  }
}

function hostOf(url: string): string {
  return URL.canParse(url) ? new URL(url).host : url
}

/** The name a client without client_name goes by: its document's host, which is all that is known of it. */
function rowOf(m: ClientMetadata, scopes: readonly string[], fetchedAt: Date) {
  return {
    clientId: m.clientId,
    name: m.clientName ?? hostOf(m.clientId),
    redirectUris: m.redirectUris,
    homepageUrl: m.clientUri ?? null,
    allowedScopes: scopes,
    fetchedAt,
  }
}

function withoutOwner(row: Application): AuthorizeApplication {
  return { ...row, owner_email: null, owner_email_verified: false }
}
