import type { Db } from '../../db/connect.js'
import { findApplicationWithOwnerByClientId } from '../../repositories/applications.js'
import type { AuthorizeApplication } from '../authorize/authorize-request.js'
import type { ApplicationCache } from './application-cache.js'
import type { MetadataClients } from './metadata-clients.js'
import { looksLikeMetadataUrl } from './metadata-document.js'

/**
 * The one door from a client_id to its application as it is now, for the endpoints a browser
 * or a client reaches with a client_id before any credential is checked: /oauth/authorize, the
 * consent form, PAR's first contact and the end_session_endpoint. The URL of a Client ID
 * Metadata Document goes to MetadataClients, which fetches, stores and audits
 * (docs/decisions/026-client-metadata-documents.md); any other client_id is read from the
 * database. What was found is then remembered in the ApplicationCache, or forgotten there when
 * nothing was, so GET /oauth/authorize's remembered-consent path can try the copy first
 * (docs/decisions/004-caching-and-ttl-bounds.md).
 */
export class ClientDirectory {
  constructor(
    private readonly db: Db,
    private readonly cache: Pick<ApplicationCache, 'remember' | 'forget'>,
    /**
     * Clients named by the URL of their metadata document (CLIENT_ID_METADATA_DOCUMENTS); absent,
     * the default, such a client_id is unknown, even when an earlier run stored its client.
     */
    private readonly metadataClients?: MetadataClients,
  ) {}

  /** The application `clientId` names, read fresh (or fetched), or undefined when there is none to use. */
  async resolve(clientId: string): Promise<AuthorizeApplication | undefined> {
    const app = looksLikeMetadataUrl(clientId)
      ? await this.metadataClients?.load(clientId)
      : await findApplicationWithOwnerByClientId(this.db, clientId)
    if (app === undefined) this.cache.forget(clientId)
    else this.cache.remember(clientId, app)
    return app
  }
}
