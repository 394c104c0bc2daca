import { createHash } from 'node:crypto'
import type { SigningAlg } from '../../db/schema.js'
import type { ExchangedIdentity } from '../../repositories/code-exchange.js'
import type { SigningKeys } from './signing-keys.js'

/*
 * ID Tokens (OpenID Connect Core 2, 3.1.3.6, 3.2.2.10) for the code flow's token response and the
 * implicit flow's authorization response (src/oauth/authorize/authorization.ts). `sub` is the user's id:
 * stable, opaque, never reused, the same for every application
 * (docs/decisions/013-subject-identifiers.md). The claims of `email` and `profile` come from
 * UserInfo whenever an access token is issued; only `response_type=id_token`, which issues none,
 * states them in the ID Token (OpenID Connect Core 5.4).
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

/** What an ID Token states of its user, request and session (OpenID Connect Core 2). */
export interface IdTokenSubject {
  readonly sub: string
  readonly alg: SigningAlg
  readonly nonce: string | null
  readonly authTime: Date | null
  readonly amr: readonly string[] | null
  readonly sid: string | null
}

/**
 * A signed ID Token for `clientId`: the claims every flow states, then `extra` (at_hash, and in
 * the implicit flow without an access token the identity claims, OpenID Connect Core 5.4).
 */
export function signIdToken(
  ctx: IdTokenIssuer,
  subject: IdTokenSubject,
  clientId: string,
  now: Date,
  extra: Record<string, unknown>,
): Promise<string> {
  const iat = Math.floor(now.getTime() / 1000)
  const claims: Record<string, unknown> = {
    iss: ctx.issuer,
    sub: subject.sub,
    aud: clientId,
    exp: iat + Math.floor(ctx.ttlMs / 1000),
    iat,
    ...extra,
  }
  if (subject.authTime !== null) claims.auth_time = Math.floor(subject.authTime.getTime() / 1000)
  if (subject.nonce !== null) claims.nonce = subject.nonce
  if (subject.amr !== null) claims.amr = subject.amr
  if (subject.sid !== null) claims.sid = subject.sid
  return ctx.keys.sign(subject.alg, claims)
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
  const subject: IdTokenSubject = {
    sub: exchanged.user_id,
    alg,
    nonce: identity.nonce,
    authTime: identity.auth_time,
    amr: identity.amr,
    sid: identity.sid,
  }
  return signIdToken(ctx, subject, clientId, now, { at_hash: accessTokenHash(accessToken, alg) })
}
