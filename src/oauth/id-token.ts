import { createHash } from 'node:crypto'
import type { SigningAlg } from '../db/schema.js'
import type { ExchangedIdentity } from '../repositories/authorization-codes.js'
import type { SigningKeys } from './signing-keys.js'

/*
 * ID Tokens (OpenID Connect Core 2, 3.1.3.6) for the code flow's token response. `sub` is the
 * user's id: stable, opaque, never reused, the same for every application
 * (docs/decisions/013-subject-identifiers.md). The claims of `email` and `profile` come from
 * UserInfo (OpenID Connect Core 5.4: with the code flow they are returned there).
 */

export interface IdTokenIssuer {
  readonly keys: SigningKeys
  readonly issuer: string
  /** ID_TOKEN_TTL. */
  readonly ttlMs: number
}

/**
 * at_hash (OpenID Connect Core 3.1.3.6): the left half of the access token's hash with the hash
 * of the signing algorithm; SHA-512 for Ed25519, as the OpenID Foundation's errata and the
 * relying-party libraries (oauth4webapi, jose) have it.
 */
export function accessTokenHash(accessToken: string, alg: SigningAlg): string {
  const digest = createHash(alg === 'EdDSA' ? 'sha512' : 'sha256')
    .update(accessToken, 'ascii')
    .digest()
  return digest.subarray(0, digest.length / 2).toString('base64url')
}

/** The signed ID Token of an exchange whose scopes include `openid`. */
export function issueIdToken(
  ctx: IdTokenIssuer,
  exchanged: { user_id: string; identity: ExchangedIdentity },
  clientId: string,
  accessToken: string,
  now: Date,
): Promise<string> {
  const { identity } = exchanged
  const alg = identity.id_token_alg
  const iat = Math.floor(now.getTime() / 1000)
  const claims: Record<string, unknown> = {
    iss: ctx.issuer,
    sub: exchanged.user_id,
    aud: clientId,
    exp: iat + Math.floor(ctx.ttlMs / 1000),
    iat,
    at_hash: accessTokenHash(accessToken, alg),
  }
  if (identity.auth_time !== null) claims.auth_time = Math.floor(identity.auth_time.getTime() / 1000)
  if (identity.nonce !== null) claims.nonce = identity.nonce
  if (identity.amr !== null) claims.amr = identity.amr
  if (identity.sid !== null) claims.sid = identity.sid
  return ctx.keys.sign(alg, claims)
}
