import type { ColumnType, Generated } from 'kysely'
import type { Timestamp, ViewColumn } from './columns.js'

/* Grants and what they issue: codes, access tokens, refresh-token families, DPoP proofs seen (src/db/schema.ts is the door). */

export interface GrantsTable {
  id: Generated<string>
  user_id: string
  application_id: string
  scopes: string[]
  created_at: Timestamp
  updated_at: Timestamp
  /** RFC 8707: the resource identifiers the user approved; null: consent for every API (migration 0027). */
  resources: ColumnType<string[] | null, string[] | null | undefined, string[] | null>
}

export interface AuthorizationCodesTable {
  id: Generated<string>
  code_hash: string
  application_id: string
  user_id: string
  scopes: string[]
  redirect_uri: string | null
  code_challenge: string | null
  code_challenge_method: 'S256' | 'plain' | null
  created_at: Timestamp
  expires_at: Timestamp
  consumed_at: Timestamp | null
  /** What the ID Token of the exchange states (migrations/0011_signing_keys.ts); null without `openid`. */
  nonce: string | null
  auth_time: Timestamp | null
  amr: string[] | null
  sid: string | null
  /** RFC 9449 §10: the JWK thumbprint the authorization request's `dpop_jkt` bound the code to (migration 0022). */
  dpop_jkt: ColumnType<string | null, string | null | undefined, string | null>
  /** RFC 8707: the resource identifiers the authorization was for, sorted and distinct; null without `resource` (migration 0025). */
  resources: ColumnType<string[] | null, string[] | null | undefined, string[] | null>
}

export interface AccessTokensTable {
  /** The token's SHA-256 digest, hex: the row's key (unique; the uuid id went in migration 0015). */
  token_hash: string
  application_id: string
  /** Null for a machine token: the client credentials grant issues it for no user (migration 0021). */
  user_id: string | null
  scopes: string[]
  authorization_code_id: string | null
  created_at: Timestamp
  revoked_at: Timestamp | null
  /** RFC 9449 §6: the JWK SHA-256 thumbprint the token is bound to (`cnf.jkt`); null for a bearer token. */
  dpop_jkt: ColumnType<string | null, string | null | undefined, string | null>
  /** Null: valid until revoked, the seed's default. */
  expires_at: ColumnType<Date | null, Date | null | undefined, Date | null>
  /** The refresh-token family that issued it; ending the family ends the token (migration 0022). */
  refresh_family_id: ColumnType<string | null, string | null | undefined, string | null>
  /**
   * RFC 8707: the resource identifiers the token is for, sorted and distinct (`aud`, RFC 7519
   * §4.1.3); null for a token without an audience, valid at any resource server as before (migration 0025).
   */
  audience: ColumnType<string[] | null, string[] | null | undefined, string[] | null>
}

/**
 * One authorization's chain of rotating refresh tokens (RFC 6749 §6, RFC 9700 §4.14.2,
 * docs/decisions/023-refresh-token-grace.md). Ending it ends every token it issued.
 */
export interface RefreshTokenFamiliesTable {
  id: Generated<string>
  application_id: string
  user_id: string
  /** What the authorization granted: a refresh may narrow it, never widen it. */
  scopes: string[]
  /** The browser session that approved it (sessions' sid), so that ending the session ends the family. */
  sid: string | null
  /** RFC 9449 §5: the key a public client's refresh tokens are bound to. */
  dpop_jkt: string | null
  /** The application's lifetimes when the authorization was made; a later change applies to new authorizations. */
  access_token_ttl_seconds: number
  refresh_token_ttl_seconds: number
  /** RFC 8707: the resource identifiers the authorization was for; a refresh may narrow them, never widen them (migration 0025). */
  resources: ColumnType<string[] | null, string[] | null | undefined, string[] | null>
  created_at: Timestamp
  /** Absolute: no rotation extends it. */
  expires_at: Timestamp
  revoked_at: Timestamp | null
}

export interface RefreshTokensTable {
  /** SHA-256 (hex) of the refresh token; the token itself is never stored. */
  token_hash: string
  family_id: string
  created_at: Timestamp
  expires_at: Timestamp
  /** When it was exchanged for its successor: presented again, it is reuse. */
  retired_at: Timestamp | null
}

/** RFC 9449 §11.1: DPoP proofs seen by any process, until their `iat` window has passed (docs/decisions/024-dpop-replay-cache.md). */
export interface DpopProofJtisTable {
  /** SHA-256 (hex) of the key's thumbprint and the proof's jti. */
  key_hash: string
  expires_at: Timestamp
}

/**
 * The live tokens (gatehouse_live_tokens_v4, migrations/0025_resource_indicators.ts): the one
 * definition of a valid token, read by the server and by every database-mode verifier of this
 * release. Its columns never change (docs/decisions/017-live-token-view.md); user_id and email
 * are null for a machine token; dpop_jkt and expires_at are null for a bearer token valid until
 * revoked; audience is null for a token without one. _v1 and _v2, for verifiers of earlier
 * releases, hold neither bound nor expired tokens, and none of _v1 to _v3 holds a token with an audience.
 */
export interface LiveTokensView {
  token_hash: ViewColumn<string>
  user_id: ViewColumn<string | null>
  application_id: ViewColumn<string>
  scopes: ViewColumn<string[]>
  created_at: ViewColumn<Date>
  client_id: ViewColumn<string>
  email: ViewColumn<string | null>
  dpop_jkt: ViewColumn<string | null>
  expires_at: ViewColumn<Date | null>
  audience: ViewColumn<string[] | null>
}
