import { randomToken, sha256Hex } from '../../lib/crypto.js'
import { LIFETIMES, QUOTAS } from '../../limits/policy.js'
import { type PushedParams, findPushedRequest, insertPushedRequest } from '../../repositories/pushed-requests.js'
import type { ClientDirectory } from '../clients/client-directory.js'
import type { ScopeVocabulary } from '../grants/scope.js'
import { validateAuthorizationRequest } from './authorize-request.js'
import { LOGIN_ASKED_PARAM } from './login-demand.js'
import { looksLikeMetadataUrl } from '../clients/metadata-document.js'
import {
  type ClientCredentials,
  type ClientEndpointContext,
  authenticateClient,
  clientIdKnown,
  extractClientCredentials,
  verifyClient,
} from '../token/client-auth.js'
import { InvalidDpopProofError, InvalidRequestError } from '../errors.js'
import type { DpopBinding } from '../dpop/binding.js'
import { type Params, RESOURCE_PARAM, optional, readParams } from '../params.js'

/*
 * Pushed Authorization Requests (RFC 9126): the client posts the authorize parameters with its
 * credentials, Gatehouse validates them as GET /oauth/authorize would and keeps them for a
 * minute under a single-use request_uri, which the browser then carries with client_id alone.
 */

/** RFC 9126 2.2: the request_uri's URN prefix; the rest is random, and only its digest is stored. */
export const REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:'

export interface PushContext extends ClientEndpointContext {
  issuer: string
  /** The scopes this Gatehouse knows (src/oauth/grants/scope.ts). */
  scopes: ScopeVocabulary
  clientDirectory: Pick<ClientDirectory, 'resolve'>
}

/** RFC 9126 2.2: the 201 response. */
export interface PushedRequestResponse {
  request_uri: string
  expires_in: number
}

/**
 * POST /oauth/par. The client authenticates as at the token endpoint (RFC 9126 2); the request is
 * then validated whole, and any problem is answered to the client as JSON (2.3), never to a
 * redirect URI.
 */
export async function pushAuthorizationRequest(
  ctx: PushContext,
  params: Params,
  authorization: string | undefined,
  dpop?: DpopBinding,
  resources: readonly string[] = [],
): Promise<PushedRequestResponse> {
  const creds = extractClientCredentials(params, authorization)
  const application = await pushingClient(ctx, creds)
  if (optional(params, 'request_uri') !== undefined) throw new InvalidRequestError('request_uri cannot be pushed (RFC 9126 2.1)')
  const pushed: PushedParams = {}
  for (const [name, value] of Object.entries(params)) {
    // The credentials stay out of storage; the asking time is Gatehouse's own, never a client's.
    if (name !== 'client_secret' && name !== LOGIN_ASKED_PARAM && value !== '') pushed[name] = value
  }
  pushed.client_id = creds.clientId
  // RFC 8707 §2 with RFC 9126 2.1: pushed like any other authorize parameter, validated below.
  if (resources.length > 0) pushed[RESOURCE_PARAM] = [...resources]
  if (dpop !== undefined) {
    // RFC 9449 §10.1: a proof binds the code to its key; a dpop_jkt beside it must name the same key.
    if (pushed.dpop_jkt !== undefined && pushed.dpop_jkt !== dpop.jkt) {
      throw new InvalidDpopProofError('dpop_jkt does not match the key of the DPoP proof')
    }
    pushed.dpop_jkt = dpop.jkt
  }
  const outcome = await validateAuthorizationRequest(readParams(pushed), ctx, (id) => ctx.clientDirectory.resolve(id), 'pushed')
  if (outcome.kind === 'fatal') throw new InvalidRequestError(outcome.message)
  if (outcome.kind === 'redirect') throw outcome.error
  const random = randomToken(32)
  const now = ctx.clock()
  await insertPushedRequest(ctx.db, {
    requestUriHash: sha256Hex(random),
    applicationId: application.id,
    params: pushed,
    now,
    expiresAt: new Date(now.getTime() + LIFETIMES.pushedRequestMs),
    keepPerApplication: QUOTAS.pushedPerApplication.max,
  })
  return { request_uri: `${REQUEST_URI_PREFIX}${random}`, expires_in: LIFETIMES.pushedRequestMs / 1000 }
}

/**
 * The client, authenticated as at the token endpoint. A client of a metadata document may push
 * its very first request (an MCP client uses PAR when the metadata lists the endpoint), so its
 * document is fetched and stored as /oauth/authorize would (ClientDirectory) before its
 * credentials are checked; with the setting off or its host not admitted it is unknown
 * (docs/decisions/026-client-metadata-documents.md).
 */
async function pushingClient(ctx: PushContext, creds: ClientCredentials) {
  if (looksLikeMetadataUrl(creds.clientId) && clientIdKnown(creds.clientId, ctx.metadataHosts)) {
    return verifyClient(ctx.db, ctx.clock, creds, await ctx.clientDirectory.resolve(creds.clientId), ctx.clientAuthFailureLimit)
  }
  return authenticateClient(ctx.db, ctx.clock, creds, ctx.clientAuthFailureLimit, ctx.metadataHosts)
}

/** Whether an authorize request names a pushed request (RFC 9126 4) rather than a request object. */
export function isPushedRequestUri(requestUri: string | undefined): requestUri is string {
  return requestUri !== undefined && requestUri.startsWith(REQUEST_URI_PREFIX)
}

/** The live pushed request a request_uri names, if it is shaped like one Gatehouse issued. */
export function findPushed(ctx: Pick<PushContext, 'db'>, requestUri: string, now: Date) {
  const random = requestUri.slice(REQUEST_URI_PREFIX.length)
  return /^[A-Za-z0-9_-]{16,128}$/.test(random) ? findPushedRequest(ctx.db, sha256Hex(random), now) : Promise.resolve(undefined)
}
