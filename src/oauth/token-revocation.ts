import type { Db } from '../db/connect.js'
import type { Clock } from '../lib/clock.js'
import { digest, isWellFormedAccessToken } from '../lib/tokens.js'
import { findAccessTokenByHash } from '../repositories/access-tokens.js'
import { authenticateClient, extractClientCredentials } from './client-auth.js'
import { UnauthorizedClientError } from './errors.js'
import { type Params, required } from './params.js'
import { revokeTokens } from './revocation.js'

export interface RevokeContext {
  db: Db
  clock: Clock
  clientAuthFailureLimit: number
}

/**
 * POST /oauth/revoke (RFC 7009 2.1): authenticate the client first, then revoke the token if
 * it was issued to that client. Unknown, malformed or already revoked tokens succeed
 * silently (2.2: "invalid tokens do not cause an error response"). `token_type_hint` may be
 * ignored (2.1): access tokens are the only kind.
 */
export async function revokeForClient(ctx: RevokeContext, params: Params, authorization: string | undefined): Promise<void> {
  const creds = extractClientCredentials(params, authorization)
  const application = await authenticateClient(ctx.db, ctx.clock, creds, ctx.clientAuthFailureLimit)
  const token = required(params, 'token')
  if (!isWellFormedAccessToken(token)) return
  const tokenHash = digest(token)
  const row = await findAccessTokenByHash(ctx.db, tokenHash)
  if (!row || row.revoked_at !== null) return
  if (row.application_id !== application.id) {
    // RFC 7009 2.1: the request is refused and the token stays active.
    throw new UnauthorizedClientError('This token was not issued to this client')
  }
  await revokeTokens(ctx.db, { kind: 'token', tokenHash, applicationId: application.id }, ctx.clock())
}
