import type { ColumnType, Generated, Insertable, Selectable } from 'kysely'

type Timestamp = ColumnType<Date, Date, Date>

export interface UsersTable {
  id: Generated<string>
  email: string
  password_hash: string
  created_at: Timestamp
}

export interface SessionsTable {
  id_hash: string
  user_id: string
  created_at: Timestamp
  expires_at: Timestamp
}

export interface ApplicationsTable {
  id: Generated<string>
  client_id: string
  secret_hash: string
  owner_id: string
  name: string
  description: Generated<string>
  redirect_uris: string[]
  allowed_scopes: string[]
  require_pkce: Generated<boolean>
  allow_implicit: Generated<boolean>
  created_at: Timestamp
  updated_at: Timestamp
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
}

export interface AccessTokensTable {
  id: Generated<string>
  token_hash: string
  application_id: string
  user_id: string
  scopes: string[]
  authorization_code_id: string | null
  created_at: Timestamp
  revoked_at: Timestamp | null
}

export interface PendingAuthorizationsTable {
  id: Generated<string>
  user_id: string
  application_id: string
  response_type: 'code' | 'token'
  redirect_uri: string | null
  scopes: string[]
  state: string | null
  code_challenge: string | null
  code_challenge_method: 'S256' | 'plain' | null
  created_at: Timestamp
  expires_at: Timestamp
}

export interface RateLimitsTable {
  key: string
  window_start: Timestamp
  count: number
}

export interface Database {
  users: UsersTable
  sessions: SessionsTable
  applications: ApplicationsTable
  grants: GrantsTable
  authorization_codes: AuthorizationCodesTable
  access_tokens: AccessTokensTable
  pending_authorizations: PendingAuthorizationsTable
  rate_limits: RateLimitsTable
}

export type User = Selectable<UsersTable>
export type Application = Selectable<ApplicationsTable>
export type NewApplication = Insertable<ApplicationsTable>
export type Grant = Selectable<GrantsTable>
export type AuthorizationCode = Selectable<AuthorizationCodesTable>
export type AccessToken = Selectable<AccessTokensTable>
export type PendingAuthorization = Selectable<PendingAuthorizationsTable>
