import type { ColumnType, Generated } from 'kysely'
import type { Timestamp } from './columns.js'

/* Accounts: users, their browser sessions, mailed links and second factors (src/db/schema.ts is the door). */

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
