import type { LIVE_TOKEN_VIEW } from '@gatehouse/verifier/shared'
import type { ColumnType, Generated, Selectable } from 'kysely'

type Timestamp = ColumnType<Date, Date, Date>

export interface UsersTable {
  id: Generated<string>
  email: string
  password_hash: string
  created_at: Timestamp
  /** Set only by the command line (`gatehouse admin add`). */
  is_operator: Generated<boolean>
  suspended_at: Timestamp | null
  /** Null until the address is proven by a mailed link (migrations/0008_accounts.ts). */
  email_verified_at: Timestamp | null
  /** Counts the account's recoveries; device cookies are signed over it (migrations/0009_account_recovery.ts). */
  credential_version: Generated<number>
  /** A confirmed TOTP secret or a passkey exists (migrations/0010_second_factor.ts). */
  second_factor: Generated<boolean>
  /** OpenID Connect `name`, set in the account settings (migrations/0011_signing_keys.ts). */
  display_name: string | null
  /** OpenID Connect `updated_at`: the last change of the profile's claims. */
  profile_updated_at: ColumnType<Date, Date | undefined, Date>
}

export interface SessionsTable {
  id_hash: string
  user_id: string
  created_at: Timestamp
  expires_at: Timestamp
  user_agent: string | null
  ip: string | null
  /** Written at log-in, then at most every few minutes (src/accounts/sessions/sessions.ts); defaults to now. */
  last_seen_at: ColumnType<Date, Date | undefined, Date>
  /** RFC 8176 methods of the log-in (migrations/0010_second_factor.ts). */
  amr: ColumnType<string[], string[] | undefined, string[]>
  /** When the log-in happened (OpenID Connect auth_time); written at log-in. */
  authenticated_at: ColumnType<Date, Date | undefined, Date>
  /** The last password or factor confirmation since ("sudo mode", REAUTH_WINDOW). */
  reauthenticated_at: Timestamp | null
}

export interface ApplicationsTable {
  id: Generated<string>
  client_id: string
  /** SHA-256 (hex) of the secret; null exactly for the public kinds, native and spa (migration 0019). */
  secret_hash: string | null
  owner_id: string
  name: string
  description: Generated<string>
  redirect_uris: string[]
  allowed_scopes: string[]
  require_pkce: Generated<boolean>
  allow_implicit: Generated<boolean>
  created_at: Timestamp
  updated_at: Timestamp
  suspended_at: Timestamp | null
  verified_at: Timestamp | null
  is_resource_server: Generated<boolean>
  homepage_url: string | null
  privacy_policy_url: string | null
  /** How its ID Tokens are signed (migrations/0011_signing_keys.ts). */
  id_token_alg: ColumnType<SigningAlg, SigningAlg | undefined, SigningAlg>
  /** RFC 9126 6: plain authorize requests are refused (migration 0012). */
  require_pushed_requests: Generated<boolean>
  /** OpenID Connect RP-Initiated Logout 1.0 3: exact targets of /oauth/logout (migration 0013). */
  post_logout_redirect_uris: ColumnType<string[], string[] | undefined, string[]>
  /** Web (confidential, the default), native or single-page (public), or machine (migration 0018). */
  kind: ColumnType<ApplicationKind, ApplicationKind | undefined, ApplicationKind>
  /**
   * The scopes an operator granted for the client credentials grant (RFC 6749 §4.4); null while
   * the grant is not enabled (migration 0021, docs/decisions/021-machine-tokens.md).
   */
  client_credentials_scopes: ColumnType<string[] | null, string[] | null | undefined, string[] | null>
  /** RFC 8628: the owner lets it use the device authorization grant (migration 0020). */
  allow_device_flow: Generated<boolean>
  /** RFC 9449 §5.2 `dpop_bound_access_tokens`: token requests without a DPoP proof are refused (migration 0022). */
  require_dpop: Generated<boolean>
  /**
   * Expiring access tokens with rotating refresh tokens (RFC 6749 §6), the owner's choice; both
   * null (the default) is the seed's token valid until revoked (migration 0022,
   * docs/decisions/022-bound-and-expiring-tokens.md).
   */
  access_token_ttl_seconds: ColumnType<number | null, number | null | undefined, number | null>
  refresh_token_ttl_seconds: ColumnType<number | null, number | null | undefined, number | null>
}

/** RFC 8628: one device's request, until its device code is exchanged or it expires (migration 0020). */
export interface DeviceAuthorizationsTable {
  id: Generated<string>
  /** SHA-256 (hex) of the device code; the code itself is never stored. */
  device_code_hash: string
  /** SHA-256 (hex) of the normalised user code (docs/decisions/020-device-codes.md). */
  user_code_hash: string
  application_id: string
  scopes: string[]
  status: ColumnType<DeviceAuthorizationStatus, DeviceAuthorizationStatus | undefined, DeviceAuthorizationStatus>
  /** Who approved or denied it. */
  user_id: string | null
  created_at: Timestamp
  expires_at: Timestamp
  last_polled_at: Timestamp | null
  /** RFC 8628 3.5: raised by 5 s at every slow_down. */
  interval_seconds: number
}

export type DeviceAuthorizationStatus = 'pending' | 'approved' | 'denied'

/** RFC 9126: a pushed authorization request, until used or expired (migration 0012). */
export interface PushedAuthorizationRequestsTable {
  id: Generated<string>
  /** SHA-256 (hex) of the request_uri's random part; the request_uri itself is never stored. */
  request_uri_hash: string
  application_id: string
  /** The validated authorize parameters as JSON, client_secret left out. */
  params: string
  created_at: Timestamp
  expires_at: Timestamp
}

export interface GrantsTable {
  id: Generated<string>
  user_id: string
  application_id: string
  scopes: string[]
  created_at: Timestamp
  updated_at: Timestamp
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

/** A column of a view: read, never written. */
type ViewColumn<T> = ColumnType<T, never, never>

/**
 * The live tokens (gatehouse_live_tokens_v3, migrations/0022_bound_and_expiring_tokens.ts): the
 * one definition of a valid token, read by the server and by every database-mode verifier of
 * this release. Its columns never change (docs/decisions/017-live-token-view.md); user_id and
 * email are null for a machine token; dpop_jkt and expires_at are null for a bearer token valid
 * until revoked. _v1 and _v2, for verifiers of earlier releases, hold neither bound nor expired tokens.
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
}

export interface PendingAuthorizationsTable {
  id: Generated<string>
  user_id: string
  application_id: string
  /** The implicit ID Token types since migration 0013. */
  response_type: 'code' | 'token' | 'id_token' | 'id_token token'
  /** Null: the response type's default (migration 0012). */
  response_mode: 'query' | 'fragment' | 'form_post' | null
  redirect_uri: string | null
  scopes: string[]
  state: string | null
  code_challenge: string | null
  code_challenge_method: 'S256' | 'plain' | null
  created_at: Timestamp
  expires_at: Timestamp
  /** OpenID Connect's nonce, when sent (migrations/0011_signing_keys.ts). */
  nonce: ColumnType<string | null, string | null | undefined, string | null>
  /** RFC 9449 §10: the key the request's `dpop_jkt` binds its code to (migrations/0023_held_request_dpop_jkt.ts). */
  dpop_jkt: ColumnType<string | null, string | null | undefined, string | null>
}

export interface RateLimitsTable {
  key: string
  window_start: Timestamp
  count: number
}

/** Keys generated by Gatehouse itself, once, and shared by every process (migrations/0003_server_secrets.ts). */
export interface ServerSecretsTable {
  name: string
  secret: string
  created_at: Timestamp
}

/**
 * Security events (migrations/0006_audit_events.ts). `id` is a bigint, which the two drivers
 * return differently (pg a string, PGlite a number): repositories select it as text.
 */
export interface AuditEventsTable {
  id: ColumnType<string, never, never>
  occurred_at: Timestamp
  event: string
  user_id: string | null
  actor_id: string | null
  client_id: string | null
  application_name: string | null
  client_address: string | null
  detail: ColumnType<string, string | undefined, string>
}

export type EmailTokenPurpose = 'verify-email' | 'reset-password' | 'change-email' | 'cancel-email-change'

/** Single-use links mailed to a user, by digest (migrations/0008_accounts.ts). */
export interface EmailTokensTable {
  id: Generated<string>
  token_hash: string
  purpose: EmailTokenPurpose
  user_id: string
  email: string
  created_at: Timestamp
  expires_at: Timestamp
  used_at: Timestamp | null
}

/** Second-factor tables (migrations/0010_second_factor.ts). */
export interface TotpEnrolmentsTable {
  user_id: string
  secret_sealed: string
  expires_at: Timestamp
}

export interface TotpSecretsTable {
  user_id: string
  secret_sealed: string
  /** The last RFC 6238 time step accepted; a bigint, selected as text where read. */
  last_step: ColumnType<string, string | number, string | number>
  created_at: Timestamp
  /** Wrong codes since the last proven second factor (migrations/0016_totp_failed_codes.ts). */
  failed_codes: Generated<number>
}

export interface RecoveryCodesTable {
  user_id: string
  code_hash: string
  created_at: Timestamp
}

export interface PasskeysTable {
  /** The credential id, base64url. */
  id: string
  user_id: string
  public_key: Uint8Array
  counter: ColumnType<string, string | number, string | number>
  transports: ColumnType<string[], string[] | undefined, string[]>
  name: string
  backed_up: boolean
  created_at: Timestamp
  last_used_at: Timestamp | null
}

export interface WebauthnChallengesTable {
  id_hash: string
  user_id: string | null
  purpose: 'register' | 'authenticate'
  challenge: string
  expires_at: Timestamp
}

export interface PendingLoginsTable {
  id_hash: string
  user_id: string
  created_at: Timestamp
  expires_at: Timestamp
  failures: Generated<number>
}

/** The ID Token signing algorithms Gatehouse offers (OpenID Connect Core 15.1: RS256 at least). */
/** docs/applications.md "Which kind of application?" */
export type ApplicationKind = 'web' | 'native' | 'spa' | 'machine'

export type SigningAlg = 'RS256' | 'ES256' | 'EdDSA'

export interface SigningKeysTable {
  /** The RFC 7638 thumbprint of the public key. */
  kid: string
  alg: SigningAlg
  /** The public JWK as JSON text. */
  public_jwk: string
  /** The private JWK's JSON, sealed (src/lib/sealed-box.ts). */
  private_jwk_sealed: string
  created_at: Timestamp
  /** Published from its creation; signs from not_before on. */
  not_before: Timestamp
  /** When the next key took over signing. */
  retired_at: Timestamp | null
  /** When the last ID Token it signed expires: then unpublished and deleted by the janitor. */
  not_after: Timestamp | null
}

export interface Database {
  users: UsersTable
  sessions: SessionsTable
  applications: ApplicationsTable
  grants: GrantsTable
  authorization_codes: AuthorizationCodesTable
  access_tokens: AccessTokensTable
  [LIVE_TOKEN_VIEW]: LiveTokensView
  pending_authorizations: PendingAuthorizationsTable
  pushed_authorization_requests: PushedAuthorizationRequestsTable
  rate_limits: RateLimitsTable
  server_secrets: ServerSecretsTable
  audit_events: AuditEventsTable
  email_tokens: EmailTokensTable
  totp_enrolments: TotpEnrolmentsTable
  totp_secrets: TotpSecretsTable
  recovery_codes: RecoveryCodesTable
  passkeys: PasskeysTable
  webauthn_challenges: WebauthnChallengesTable
  pending_logins: PendingLoginsTable
  signing_keys: SigningKeysTable
  device_authorizations: DeviceAuthorizationsTable
  refresh_token_families: RefreshTokenFamiliesTable
  refresh_tokens: RefreshTokensTable
  dpop_proof_jtis: DpopProofJtisTable
}

export type User = Selectable<UsersTable>
export type Application = Selectable<ApplicationsTable>
export type Grant = Selectable<GrantsTable>
export type AuthorizationCode = Selectable<AuthorizationCodesTable>
export type AccessToken = Selectable<AccessTokensTable>
export type PendingAuthorization = Selectable<PendingAuthorizationsTable>
export type DeviceAuthorization = Selectable<DeviceAuthorizationsTable>
