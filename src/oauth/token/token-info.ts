import type { VerifiedToken } from '@gatehouse/verifier/shared'
import { audienceClaim } from './introspection.js'

/**
 * GET /oauth/token/info: the token describes itself, in Doorkeeper's shape (scopes as a list,
 * times in seconds). `expires_in` counts the seconds left, null for a token valid until revoked;
 * a token bound to a key says so as introspection does (`token_type`, `cnf.jkt`, RFC 9449 §6.2),
 * and so does a token minted for resources (`aud`, RFC 8707).
 */
export function tokenInfoResponse(token: VerifiedToken, now: number): string {
  return JSON.stringify({
    resource_owner_id: token.userId,
    scope: token.scopes,
    application: { uid: token.clientId },
    created_at: token.issuedAt,
    expires_in: token.expiresAt === null ? null : Math.max(0, token.expiresAt - now),
    token_type: token.jkt === null ? 'Bearer' : 'DPoP',
    cnf: token.jkt === null ? undefined : { jkt: token.jkt },
    aud: audienceClaim(token.audience),
  })
}
