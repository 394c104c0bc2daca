import type { LIVE_TOKEN_VIEW } from '@gatehouse/verifier/shared'
import type { ColumnType, Generated, Selectable } from 'kysely'

import type { Timestamp } from './schema/columns.js'
import type {
  EmailTokensTable,
  PasskeysTable,
  PendingLoginsTable,
  RecoveryCodesTable,
  SessionsTable,
  TotpEnrolmentsTable,
  TotpSecretsTable,
  UsersTable,
  WebauthnChallengesTable,
} from './schema/accounts.js'
import type {
  AccessTokensTable,
  AuthorizationCodesTable,
  DpopProofJtisTable,
  GrantsTable,
  LiveTokensView,
  RefreshTokenFamiliesTable,
  RefreshTokensTable,
} from './schema/tokens.js'

export type * from './schema/accounts.js'
export type * from './schema/tokens.js'

export interface ApplicationsTable {
  id: Generated<string>
  client_id: string
  /** SHA-256 (hex) of the secret; null exactly for the public kinds, native and spa (migration 0019). */
  secret_hash: string | null
  /** Null exactly for a client of a metadata document, which nobody owns (migration 0026). */
  owner_id: string | null
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
  /**
   * RFC 8707: for a resource server, the lifetime of tokens minted for its identifiers when the
   * client application chose none; null: RESOURCE_TOKEN_TTL_SECONDS_DEFAULT (migration 0025,
   * docs/decisions/025-audiences.md).
   */
  resource_token_ttl_seconds: ColumnType<number | null, number | null | undefined, number | null>
  /**
   * Set exactly for a client whose client_id is the URL of its metadata document: when the
   * document was last fetched (migration 0026, docs/decisions/026-client-metadata-documents.md).
   */
  metadata_fetched_at: ColumnType<Date | null, Date | null | undefined, Date | null>
}

/**
 * RFC 8707 §2: a resource identifier an operator declared for a resource server application; it
 * belongs to that one application (migration 0025).
 */
export interface ResourceIdentifiersTable {
  /** An absolute URL without fragment, as the client sends it in `resource`. */
  identifier: string
  application_id: string
  created_at: Timestamp
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
  /** RFC 8707: the resource identifiers the device asked for; null without `resource` (migration 0025). */
  resources: ColumnType<string[] | null, string[] | null | undefined, string[] | null>
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
  /** RFC 8707: the resource identifiers the request asked for; null without `resource` (migration 0025). */
  resources: ColumnType<string[] | null, string[] | null | undefined, string[] | null>
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

/** docs/applications.md "Which kind of application?" */
export type ApplicationKind = 'web' | 'native' | 'spa' | 'machine'

/** The ID Token signing algorithms Gatehouse offers (OpenID Connect Core 15.1: RS256 at least). */
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
  resource_identifiers: ResourceIdentifiersTable
}

export type User = Selectable<UsersTable>
export type Application = Selectable<ApplicationsTable>
export type Grant = Selectable<GrantsTable>
export type AuthorizationCode = Selectable<AuthorizationCodesTable>
export type AccessToken = Selectable<AccessTokensTable>
export type PendingAuthorization = Selectable<PendingAuthorizationsTable>
export type DeviceAuthorization = Selectable<DeviceAuthorizationsTable>
export type ResourceIdentifier = Selectable<ResourceIdentifiersTable>
