import type { TokenCache } from '@gatehouse/verifier/shared'
import type { VerifiedToken } from '@gatehouse/verifier/shared'
import type { ClientAuthCache } from './client-auth-cache.js'
import { extractClientCredentials } from './client-auth.js'
import { type Params, required } from '../params.js'

/*
 * POST /oauth/introspect (RFC 7662). An application an operator marked as a resource server
 * may introspect any token, since it must check every token presented to it whoever it was
 * issued to, and sees `username`. Any other application learns about its own tokens only,
 * without `username`: anyone can register an application, and a leaked token must not tell a
 * stranger whose it is. Another application's token answers exactly `{"active":false}` (RFC
 * 7662 4 lets the answer depend on the caller). The answer for a token that is not active says
 * nothing else (2.2), so it cannot tell unknown from revoked or malformed.
 */

export const INACTIVE_RESPONSE = '{"active":false}'

/**
 * RFC 7662 2.2, serialised once per cache entry. `exp` only for a token that expires (the
 * default lives until revoked); a token bound to a key says so by `token_type` DPoP and
 * `cnf.jkt` (RFC 9449 §6.2, RFC 7800 §3.1), which a resource server must then check.
 * A token minted for resources (RFC 8707) names them in `aud`.
 * `withUsername`: the resource servers' answer; the token's own client gets it without.
 */
export function activeResponse(token: VerifiedToken, withUsername = true): string {
  return JSON.stringify({
    active: true,
    scope: token.scopes.join(' '),
    client_id: token.clientId,
    username: withUsername ? (token.username ?? undefined) : undefined,
    // RFC 9068 §2.2: a machine token's subject is its client (docs/decisions/021-machine-tokens.md).
    sub: token.subject,
    token_type: token.jkt === null ? 'Bearer' : 'DPoP',
    iat: token.issuedAt,
    exp: token.expiresAt ?? undefined,
    cnf: token.jkt === null ? undefined : { jkt: token.jkt },
    aud: audienceClaim(token.audience),
  })
}

/**
 * RFC 7662 §2.2 `aud` as RFC 7519 §4.1.3 writes it: the identifier itself when the token is for
 * one resource, the array when for several; absent for a token without an audience.
 */
export function audienceClaim(audience: readonly string[] | null): string | readonly string[] | undefined {
  if (audience === null) return undefined
  return audience.length === 1 ? audience[0] : audience
}

export interface IntrospectionContext {
  clients: ClientAuthCache
  tokens: TokenCache<{ readonly token: VerifiedToken; readonly introspection: string; readonly ownIntrospection: string }>
}

/** The response body; throws invalid_client (401) or invalid_request. */
export async function introspect(ctx: IntrospectionContext, params: Params, authorization: string | undefined): Promise<string> {
  // RFC 7662 2.1: the caller authenticates before anything is said about the token.
  const caller = await ctx.clients.authenticate(extractClientCredentials(params, authorization))
  // `token_type_hint` may be ignored (2.1): access tokens are the only kind.
  const entry = await ctx.tokens.check(required(params, 'token'))
  if (entry === null) return INACTIVE_RESPONSE
  if (caller.isResourceServer) return entry.introspection
  return entry.token.clientId === caller.clientId ? entry.ownIntrospection : INACTIVE_RESPONSE
}
