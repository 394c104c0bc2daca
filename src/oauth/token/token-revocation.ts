import { sha256Hex } from '../../lib/crypto.js'
import { isWellFormedAccessToken, isWellFormedRefreshToken } from '@gatehouse/verifier/shared'
import { findLiveTokenApplication } from '../../repositories/access-tokens.js'
import { findRefreshToken } from '../../repositories/refresh-tokens.js'
import { revoke } from '../../revocation/revoke.js'
import {
  type ClientCredentials,
  type ClientEndpointContext,
  authenticateClient,
  extractClientCredentials,
  refuseUnknownMetadataClient,
} from './client-auth.js'
import { UnauthorizedClientError } from '../errors.js'
import { type Params, required } from '../params.js'

/**
 * POST /oauth/revoke (RFC 7009 2.1): authenticate the client, then revoke the token if it was
 * issued to that client. Unknown, malformed or already revoked tokens succeed silently (2.2:
 * "invalid tokens do not cause an error response"). `token_type_hint` may be ignored (2.1): the
 * prefix tells an access token from a refresh token. Revoking an access token ends that token
 * only, even one of a refresh-token family; revoking a refresh token ends its family and every
 * access token of it (2.1: "SHOULD also invalidate all access tokens based on the same
 * authorization grant"; docs/expiring-tokens.md). The access token's common case is one
 * statement; the rest explains a miss.
 */
export async function revokeForClient(ctx: ClientEndpointContext, params: Params, authorization: string | undefined): Promise<void> {
  const creds = extractClientCredentials(params, authorization)
  // The access token's statement reads the client itself: a metadata client unknown now is refused first.
  refuseUnknownMetadataClient(creds, ctx.metadataHosts)
  const token = required(params, 'token')
  if (isWellFormedRefreshToken(token)) return revokeRefreshToken(ctx, creds, token)
  if (!isWellFormedAccessToken(token)) {
    await authenticateClient(ctx.db, ctx.clock, creds, ctx.clientAuthFailureLimit, ctx.metadataHosts)
    return
  }
  const tokenHash = sha256Hex(token)
  const revoked = await revoke(
    ctx,
    {
      kind: 'token-of-client',
      clientId: creds.clientId,
      secretHash: creds.clientSecret === undefined ? undefined : sha256Hex(creds.clientSecret),
      tokenHash,
    },
    ctx.clock(),
  )
  if (revoked > 0) return
  const application = await authenticateClient(ctx.db, ctx.clock, creds, ctx.clientAuthFailureLimit, ctx.metadataHosts)
  const owner = await findLiveTokenApplication(ctx.db, tokenHash)
  if (owner !== undefined && owner !== application.id) {
    // RFC 7009 2.1: the request is refused and the token stays active.
    throw new UnauthorizedClientError('This token was not issued to this client')
  }
}

/** A refresh token: its family, if it is this client's (RFC 7009 §2.1), after the client is authenticated. */
async function revokeRefreshToken(ctx: ClientEndpointContext, creds: ClientCredentials, token: string): Promise<void> {
  const application = await authenticateClient(ctx.db, ctx.clock, creds, ctx.clientAuthFailureLimit, ctx.metadataHosts)
  const row = await findRefreshToken(ctx.db, sha256Hex(token))
  if (row === undefined || row.family_revoked_at !== null) return
  if (row.application_id !== application.id) throw new UnauthorizedClientError('This token was not issued to this client')
  await revoke(ctx, { kind: 'refresh-families', familyIds: [row.family_id] }, ctx.clock())
}
