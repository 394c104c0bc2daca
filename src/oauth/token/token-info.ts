import type { VerifiedToken } from '@gatehouse/verifier/shared'

/**
 * GET /oauth/token/info: the token describes itself, in Doorkeeper's shape (scopes as a list,
 * times in seconds). Tokens live until revoked, hence `expires_in: null`.
 */
export function tokenInfoResponse(token: VerifiedToken): string {
  return JSON.stringify({
    resource_owner_id: token.userId,
    scope: token.scopes,
    application: { uid: token.clientId },
    created_at: token.issuedAt,
    expires_in: null,
  })
}
