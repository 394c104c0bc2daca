import type { Db } from '../db/connect.js'
import type { Application } from '../db/schema.js'

/*
 * Clients of metadata documents (migration 0026, docs/decisions/026-client-metadata-documents.md):
 * applications rows with no owner, written only from their fetched document. Every statement
 * here touches only such rows (metadata_fetched_at is not null), so no registered application
 * can be changed through a URL.
 */

export interface MetadataClientRow {
  clientId: string
  name: string
  redirectUris: readonly string[]
  homepageUrl: string | null
  /** The scopes such a client may ask for: all the vocabulary's; the user consents to each request. */
  allowedScopes: readonly string[]
  fetchedAt: Date
}

/**
 * Inserts the client, or refreshes its name, redirect URIs, link and fetch time from a newer
 * fetch; a public client (kind native, no secret) with PKCE required. Undefined when the
 * client_id belongs to a registered application, which is never touched.
 */
export function upsertMetadataClient(db: Db, c: MetadataClientRow): Promise<Application | undefined> {
  return db
    .insertInto('applications')
    .values({
      kind: 'native',
      client_id: c.clientId,
      secret_hash: null,
      owner_id: null,
      name: c.name,
      description: '',
      redirect_uris: [...c.redirectUris],
      allowed_scopes: [...c.allowedScopes],
      require_pkce: true,
      allow_implicit: false,
      id_token_alg: 'RS256',
      homepage_url: c.homepageUrl,
      created_at: c.fetchedAt,
      updated_at: c.fetchedAt,
      metadata_fetched_at: c.fetchedAt,
    })
    .onConflict((oc) =>
      oc
        .column('client_id')
        .doUpdateSet({
          name: c.name,
          redirect_uris: [...c.redirectUris],
          allowed_scopes: [...c.allowedScopes],
          homepage_url: c.homepageUrl,
          updated_at: c.fetchedAt,
          metadata_fetched_at: c.fetchedAt,
          // Never verified (src/operator/moderation.ts): a verification set by an earlier version goes at the next fetch.
          verified_at: null,
        })
        .where('applications.metadata_fetched_at', 'is not', null),
    )
    .returningAll()
    .executeTakeFirst()
}

/** Whether a client of this URL is stored (applications_client_id_key). */
export async function metadataClientExists(db: Db, clientId: string): Promise<boolean> {
  const row = await db
    .selectFrom('applications')
    .select('id')
    .where('client_id', '=', clientId)
    .where('metadata_fetched_at', 'is not', null)
    .executeTakeFirst()
  return row !== undefined
}

/** How many clients of metadata documents are stored (applications_metadata_fetched_at_idx). */
export async function countMetadataClients(db: Db): Promise<number> {
  const row = await db
    .selectFrom('applications')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('metadata_fetched_at', 'is not', null)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}
