import type { Db } from '../../db/connect.js'
import type { User } from '../../db/schema.js'
import { findUserById } from '../../repositories/users.js'
import type { ServerTokenCache } from '../token/token-validity.js'
import type { BindingCheck } from '../token/presentation.js'
import type { VerifyFailure } from '@gatehouse/verifier/shared'
import { canonicalIdentifier } from '../resources/resource-indicators.js'

/*
 * UserInfo (OpenID Connect Core 5.3): the claims of the bearer token's user, by the token's
 * scopes (5.4). The token is checked through the same cache as introspection and token info,
 * which every revocation reaches through the bus, so a revoked token stops working as fast
 * there (docs/decisions/004-caching-and-ttl-bounds.md).
 */

export type UserInfoAnswer =
  | { kind: 'claims'; body: string }
  /** RFC 6750 3.1: 401 invalid_token. */
  | { kind: 'invalid' }
  /** RFC 6750 3.1: 403 insufficient_scope (the token lacks `openid`). */
  | { kind: 'insufficient-scope' }
  /** RFC 9449 §7: the token was not presented as its binding requires (a bound token as Bearer, a bad proof). */
  | { kind: 'refused'; failure: VerifyFailure }

/**
 * `binding`: how the token was presented (src/oauth/token/presentation.ts), judged once the token
 * is known valid. UserInfo is a resource of this server, named by its issuer: a token whose
 * audience names other APIs only was minted for them (RFC 8707 §2, docs/decisions/025-audiences.md)
 * and is invalid here (RFC 6750 §3.1 invalid_token), as their verifiers refuse tokens for others.
 */
export async function answerUserInfo(
  ctx: { db: Db; tokens: ServerTokenCache; issuer: string },
  token: string,
  binding: BindingCheck,
): Promise<UserInfoAnswer> {
  const entry = await ctx.tokens.check(token)
  if (entry == null) return { kind: 'invalid' }
  const { audience } = entry.token
  if (audience !== null && !audience.includes(canonicalIdentifier(ctx.issuer))) return { kind: 'invalid' }
  const refused = await binding(entry.token, token)
  if (refused !== undefined) return { kind: 'refused', failure: refused }
  const { scopes, userId } = entry.token
  // A machine token has no user to describe, and is never granted `openid` (docs/decisions/021-machine-tokens.md).
  if (userId === null || !scopes.includes('openid')) return { kind: 'insufficient-scope' }
  const user = await findUserById(ctx.db, userId)
  if (!user || user.suspended_at !== null) return { kind: 'invalid' }
  return { kind: 'claims', body: JSON.stringify({ sub: user.id, ...claimsOfScopes(user, scopes) }) }
}

/**
 * The claims of the `email` and `profile` scopes (OpenID Connect Core 5.4), from UserInfo, or in
 * the ID Token when no access token is issued (response_type=id_token).
 */
export function claimsOfScopes(
  user: Pick<User, 'email' | 'email_verified_at' | 'display_name' | 'profile_updated_at'>,
  scopes: readonly string[],
): Record<string, unknown> {
  const claims: Record<string, unknown> = {}
  if (scopes.includes('email')) {
    claims.email = user.email
    // Only an address proven by a mailed link is verified (docs/accounts.md "Email verification").
    claims.email_verified = user.email_verified_at !== null
  }
  if (scopes.includes('profile')) {
    if (user.display_name !== null) claims.name = user.display_name
    claims.updated_at = Math.floor(user.profile_updated_at.getTime() / 1000)
  }
  return claims
}
