import type { Db } from '../../db/connect.js'
import type { Application } from '../../db/schema.js'
import type { Clock } from '../../lib/clock.js'
import { constantTimeEqual, sha256Hex } from '../../lib/crypto.js'
import { RATE_LIMITS, rateRule } from '../../limits/policy.js'
import { takeSlots } from '../../limits/rate-limiter.js'
import { isClientIdWithinBound } from '../../lib/tokens.js'
import { findApplicationByClientId } from '../../repositories/applications.js'
import type { RevocationBus } from '../../revocation/bus.js'
import { type HostRules, checkClientIdHost, looksLikeMetadataUrl } from '../clients/metadata-document.js'
import { InvalidClientError, InvalidRequestError, SlowDownError } from '../errors.js'
import { basicCredentials, optional, type Params } from '../params.js'

/** What an endpoint that authenticates clients (token, revoke) needs. */
export interface ClientEndpointContext {
  db: Db
  clock: Clock
  /** Revocations made here (a replayed code, RFC 7009) reach this process's caches through it. */
  bus: RevocationBus
  /** Failed authentications per client in the window before 429 (TOKEN_AUTH_FAILURE_LIMIT). */
  clientAuthFailureLimit: number
  /**
   * CLIENT_ID_METADATA_DOCUMENTS' host rules when it is on; undefined when off. A client of a
   * metadata document is known here only under them (clientIdKnown).
   */
  metadataHosts: HostRules | undefined
}

export interface ClientCredentials {
  clientId: string
  /**
   * Undefined when the request names the client by client_id alone: a public client's
   * `token_endpoint_auth_method=none` (RFC 6749 2.1, 2.3; docs/decisions/019-public-clients-and-consent.md).
   */
  clientSecret: string | undefined
  /** Whether HTTP Basic was used: an invalid_client answer then carries WWW-Authenticate. */
  usedBasic: boolean
}

/**
 * Client credentials from the Authorization header or the parameters, never both
 * (RFC 6749 2.3: "MUST NOT use more than one authentication method in each request").
 * A client_id parameter next to Basic is tolerated when it names the same client. A client_id
 * without a secret is a public client's request; verifyClient refuses it for any other client.
 */
export function extractClientCredentials(params: Params, authorization: string | undefined): ClientCredentials {
  const bodyId = optional(params, 'client_id')
  const bodySecret = optional(params, 'client_secret')
  if (authorization !== undefined && /^basic\s/i.test(authorization)) {
    const basic = basicCredentials(authorization)
    if (bodySecret !== undefined) throw new InvalidRequestError('Use HTTP Basic or client_secret in the request, not both')
    if (bodyId !== undefined && bodyId !== basic.id) throw new InvalidRequestError('client_id does not match the HTTP Basic credentials')
    return { clientId: basic.id, clientSecret: basic.secret, usedBasic: true }
  }
  if (bodyId === undefined) throw new InvalidClientError('Client authentication is required: client_id and client_secret')
  return { clientId: bodyId, clientSecret: bodySecret, usedBasic: false }
}

/**
 * For the endpoints only confidential clients use (introspection, the revocation stream): a secret
 * is required. Narrows `creds` itself, so the introspection hot path allocates nothing more.
 */
export function assertConfidential(creds: ClientCredentials): asserts creds is ClientCredentials & { clientSecret: string } {
  if (creds.clientSecret === undefined) throw new InvalidClientError('client_secret is required')
}

/**
 * Whether `clientId` can name a client at all. A URL names the client of a Client ID Metadata
 * Document (Gatehouse's own client_ids never contain a colon), known only while
 * CLIENT_ID_METADATA_DOCUMENTS is on and its host permitted: with the setting off or the host
 * blocked, a row stored earlier is unknown here as it is at /oauth/authorize, so its codes and
 * refresh tokens are refused with invalid_client (docs/agents.md "Off by default",
 * docs/decisions/026-client-metadata-documents.md). Its access tokens are not looked at here.
 */
export function clientIdKnown(clientId: string, metadataHosts: HostRules | undefined): boolean {
  if (!looksLikeMetadataUrl(clientId)) return true
  if (metadataHosts === undefined || !URL.canParse(clientId)) return false
  // The fetcher's own host rule, trailing dot included: a row it could not have fetched now is unknown.
  return checkClientIdHost(new URL(clientId), metadataHosts).ok
}

/**
 * For the token endpoint's one-statement paths, which read the client inside the statement: an
 * unknown metadata client is refused before it, as verifyClient refuses any unknown client.
 */
export function refuseUnknownMetadataClient(creds: ClientCredentials, metadataHosts: HostRules | undefined): void {
  if (!clientIdKnown(creds.clientId, metadataHosts)) throw new InvalidClientError('Client authentication failed', creds.usedBasic)
}

/** The application with this client_id, if any and known (clientIdKnown); an overlong one is not looked up. */
export function findClient(db: Db, clientId: string, metadataHosts: HostRules | undefined): Promise<Application | undefined> {
  return isClientIdWithinBound(clientId) && clientIdKnown(clientId, metadataHosts)
    ? findApplicationByClientId(db, clientId)
    : Promise.resolve(undefined)
}

/**
 * The one check of client credentials (RFC 6749 2.3.1), for `app` as read by findClient: the
 * secret's digest must match the stored one, and the application must not be suspended.
 * Throws invalid_client, saying why for a suspended application's right credentials (docs/operating/admin.md
 * "Suspension") and not counting those as a failure; wrong credentials are counted
 * per existing client, and past the limit the answer is 429 until the window ends. The count
 * is consulted only after the credentials were found wrong, so a client holding its real
 * secret is never locked out.
 */
export async function verifyClient(
  db: Db,
  clock: Clock,
  creds: ClientCredentials,
  app: Application | undefined,
  failureLimit: number,
): Promise<Application> {
  if (app && (creds.clientSecret === undefined || app.secret_hash === null)) return verifyPublicClient(creds, app)
  if (
    app &&
    app.secret_hash !== null &&
    creds.clientSecret !== undefined &&
    constantTimeEqual(sha256Hex(creds.clientSecret), app.secret_hash)
  ) {
    if (app.suspended_at !== null) throw new InvalidClientError('This application is suspended by the operator', creds.usedBasic)
    return app
  }
  if (app) {
    const rule = rateRule(RATE_LIMITS.clientAuthentication, creds.clientId, { clientAuthFailures: failureLimit })
    const decision = await takeSlots(db, clock, [rule])
    if (!decision.allowed) throw new SlowDownError('Too many failed client authentications; retry later', decision.retryAfterSeconds)
  }
  throw new InvalidClientError('Client authentication failed', creds.usedBasic)
}

/**
 * RFC 6749 2.1 and 10.1: a public client (native or single-page app, no secret) is named by
 * client_id alone and a confidential one never is; a secret sent for a public client is refused
 * rather than ignored, since whoever sent it believes it means something
 * (docs/decisions/019-public-clients-and-consent.md). Nothing here is a guess at a secret, so
 * nothing counts toward the failure limit.
 */
function verifyPublicClient(creds: ClientCredentials, app: Application): Application {
  if (app.secret_hash !== null) throw new InvalidClientError('client_secret is required: this application is confidential', creds.usedBasic)
  if (creds.clientSecret !== undefined) {
    throw new InvalidClientError(
      'This application is public (a native or single-page app) and has no secret: send client_id alone',
      creds.usedBasic,
    )
  }
  if (app.suspended_at !== null) throw new InvalidClientError('This application is suspended by the operator')
  return app
}

/** Reads the client and checks its credentials (verifyClient); throws invalid_client (or 429). */
export async function authenticateClient(
  db: Db,
  clock: Clock,
  creds: ClientCredentials,
  failureLimit: number,
  metadataHosts: HostRules | undefined,
): Promise<Application> {
  return verifyClient(db, clock, creds, await findClient(db, creds.clientId, metadataHosts), failureLimit)
}
