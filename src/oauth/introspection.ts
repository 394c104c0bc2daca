import type { TokenCache } from '@gatehouse/verifier/shared'
import type { VerifiedToken } from '@gatehouse/verifier/shared'
import type { ClientAuthCache } from './client-auth-cache.js'
import { extractClientCredentials } from './client-auth.js'
import { type Params, required } from './params.js'

/*
 * POST /oauth/introspect (RFC 7662). Any registered application may introspect any token: the
 * callers are resource servers, which must check every token presented to them whoever it was
 * issued to (RFC 7662 4 leaves that policy to the server). The answer for a token that is not
 * active says nothing else (2.2), so it cannot tell unknown from revoked or malformed.
 */

export const INACTIVE_RESPONSE = '{"active":false}'

/** RFC 7662 2.2, serialised once per cache entry. Tokens do not expire, so there is no `exp`. */
export function activeResponse(token: VerifiedToken): string {
  return JSON.stringify({
    active: true,
    scope: token.scopes.join(' '),
    client_id: token.clientId,
    username: token.username ?? undefined,
    sub: token.userId,
    token_type: 'Bearer',
    iat: token.issuedAt,
  })
}

export interface IntrospectionContext {
  clients: ClientAuthCache
  tokens: TokenCache<{ readonly token: VerifiedToken; readonly introspection: string }>
}

/** The response body; throws invalid_client (401) or invalid_request. */
export async function introspect(ctx: IntrospectionContext, params: Params, authorization: string | undefined): Promise<string> {
  // RFC 7662 2.1: the caller authenticates before anything is said about the token.
  await ctx.clients.authenticate(extractClientCredentials(params, authorization))
  // `token_type_hint` may be ignored (2.1): access tokens are the only kind.
  const entry = await ctx.tokens.check(required(params, 'token'))
  return entry === null ? INACTIVE_RESPONSE : entry.introspection
}
