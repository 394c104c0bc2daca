import type { EmailTokenPurpose } from '../db/schema.js'
import type { JanitorTable } from '../repositories/janitor.js'
import type { SlotRule } from './rate-limiter.js'

/*
 * Every rate limit, quota and expiry of Gatehouse, in one table (docs/operating/limits.md,
 * docs/architecture.md "Limits"). Each entry says what it counts or keeps, over which window or
 * for how long, and which setting sets its number: `setting` is the field of the settings object
 * the caller passes in (src/config.ts builds those objects; this module does not read them
 * itself), `env` the variable that sets it. An entry with no setting is a fixed number.
 */

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

/** The numbers of the configurable limits, as passed in by the caller (never read from src/config.ts here). */
export interface LimitSettings {
  /** Failed log-ins per (account, client address), and per device cookie, in 15 minutes. */
  readonly loginFailures: number
  /** Failed log-ins per account in an hour above which only browsers with its device cookie may log in. */
  readonly loginAccountAttack: number
  /** Failed log-ins per client address, whatever the accounts, in 15 minutes (password spraying). */
  readonly loginAddressFailures: number
  /** Log-in attempts per client address, successful or not, in an hour: each costs an argon2 hash. */
  readonly loginAddressAttempts: number
  /** Sign-up attempts per client address in an hour. */
  readonly signups: number
  /** Verification mails one account may ask for in an hour ("Resend verification email"). */
  readonly verificationEmails: number
  /** Password-reset requests per email address typed, in an hour. */
  readonly passwordResets: number
  /** Password-reset requests per client address, whatever the emails, in an hour. */
  readonly passwordResetAddresses: number
  /** Email-change requests one account may make in an hour (each mails the new address). */
  readonly emailChanges: number
  /** Email-change requests naming one new address, from any accounts, in an hour. */
  readonly emailChangeAddresses: number
  /** Failed client authentications per client_id in 15 minutes. */
  readonly clientAuthFailures: number
  /** WebAuthn challenges one account (or pending log-in's account) may be handed in 15 minutes. */
  readonly webauthnChallenges: number
  /**
   * Consecutive wrong codes after which an account's authenticator-app codes are refused until a
   * recovery code or a passkey proves its owner (docs/decisions/011-second-factor.md). Not a
   * window: the count falls back to 0 only at a proven second factor.
   */
  readonly secondFactorLockAfter: number
  /** User codes typed on the /device page per client address, and per account, in 15 minutes (RFC 8628 5.1). */
  readonly deviceCodeEntries: number
}

export type LimitSetting = keyof LimitSettings

/** A rate limit: attempts counted under `${prefix}:${subject}` in a fixed window (src/limits/rate-limiter.ts). */
export interface RateLimit<S extends LimitSetting = LimitSetting> {
  readonly prefix: string
  readonly windowMs: number
  readonly setting: S
  readonly env: string
}

export const RATE_LIMITS = {
  /** Failed log-ins per client address, any accounts (password spraying). */
  loginAddress: { prefix: 'login:addr', windowMs: 15 * MINUTE, setting: 'loginAddressFailures', env: 'LOGIN_ADDRESS_FAILURE_LIMIT' },
  /** Failed log-ins per (client address, account); the subject is `${address}:${email}`. */
  loginAccountAddress: { prefix: 'login:acct-addr', windowMs: 15 * MINUTE, setting: 'loginFailures', env: 'LOGIN_FAILURE_LIMIT' },
  /** Failed log-ins per account from anywhere: past it the account is "under attack". */
  loginAccount: { prefix: 'login:acct', windowMs: HOUR, setting: 'loginAccountAttack', env: 'LOGIN_ACCOUNT_ATTACK_LIMIT' },
  /**
   * Every log-in attempt per client address, successful or not, device cookie or not: the failure
   * limits let the right password through for free, and each success costs an argon2 hash, a
   * session row and an audit row (docs/operating/limits.md). High enough for a large office behind one
   * address, low enough that one address cannot keep a core busy hashing.
   */
  loginAddressAttempts: { prefix: 'login:addr-all', windowMs: HOUR, setting: 'loginAddressAttempts', env: 'LOGIN_ADDRESS_ATTEMPT_LIMIT' },
  /** Failed log-ins per device cookie. */
  loginDevice: { prefix: 'login:device', windowMs: 15 * MINUTE, setting: 'loginFailures', env: 'LOGIN_FAILURE_LIMIT' },
  /**
   * Wrong second-factor codes and passkey assertions per account, from anywhere, whatever device
   * cookie is shown: the log-in's second step and /reauth's code count here together, so that
   * neither device cookies nor addresses multiply one account's guesses (docs/operating/limits.md).
   */
  secondFactorAccount: { prefix: 'second-factor:acct', windowMs: 15 * MINUTE, setting: 'loginFailures', env: 'LOGIN_FAILURE_LIMIT' },
  /** WebAuthn challenges handed out per account: a passkey's registration, or the second step of its pending log-in. */
  webauthnChallengeAccount: {
    prefix: 'webauthn:acct',
    windowMs: 15 * MINUTE,
    setting: 'webauthnChallenges',
    env: 'WEBAUTHN_CHALLENGE_LIMIT',
  },
  /** WebAuthn challenges handed out per client address for an account (registration, second step); each is a stored row. */
  webauthnChallengeAddress: {
    prefix: 'webauthn:addr',
    windowMs: HOUR,
    setting: 'loginAddressAttempts',
    env: 'LOGIN_ADDRESS_ATTEMPT_LIMIT',
  },
  /** Wrong current passwords on the Account pages, per account. */
  reauthentication: { prefix: 'reauth', windowMs: 15 * MINUTE, setting: 'loginFailures', env: 'LOGIN_FAILURE_LIMIT' },
  /** Sign-up attempts per client address. */
  signup: { prefix: 'signup:addr', windowMs: HOUR, setting: 'signups', env: 'SIGNUP_LIMIT' },
  /** Verification mails asked for per account. */
  verificationEmail: { prefix: 'verify-mail', windowMs: HOUR, setting: 'verificationEmails', env: 'VERIFICATION_EMAIL_LIMIT' },
  /** Password-reset requests per email address typed. */
  passwordResetEmail: { prefix: 'reset:email', windowMs: HOUR, setting: 'passwordResets', env: 'PASSWORD_RESET_LIMIT' },
  /** Password-reset requests per client address. */
  passwordResetAddress: {
    prefix: 'reset:addr',
    windowMs: HOUR,
    setting: 'passwordResetAddresses',
    env: 'PASSWORD_RESET_ADDRESS_LIMIT',
  },
  /** Email-change requests per account: each mails the new address and stores a link for a day. */
  emailChange: { prefix: 'email-change:user', windowMs: HOUR, setting: 'emailChanges', env: 'EMAIL_CHANGE_LIMIT' },
  /** Email-change requests naming one new address, from any accounts, so that many accounts cannot flood one inbox. */
  emailChangeAddress: { prefix: 'email-change:to', windowMs: HOUR, setting: 'emailChangeAddresses', env: 'EMAIL_CHANGE_ADDRESS_LIMIT' },
  /** Failed client authentications per client_id (token, revoke and the resource endpoints). */
  clientAuthentication: { prefix: 'client-auth', windowMs: 15 * MINUTE, setting: 'clientAuthFailures', env: 'TOKEN_AUTH_FAILURE_LIMIT' },
  /**
   * User codes typed on the /device page per client address, right or wrong: with 20^8 codes and
   * at most QUOTAS.deviceAuthorizationsPerApplication live per application, this keeps a guess's
   * odds negligible (RFC 8628 5.1, docs/decisions/020-device-codes.md).
   */
  deviceCodeAddress: { prefix: 'device-code:addr', windowMs: 15 * MINUTE, setting: 'deviceCodeEntries', env: 'DEVICE_CODE_ENTRY_LIMIT' },
  /** The same per account, whatever the addresses it types from. */
  deviceCodeAccount: { prefix: 'device-code:acct', windowMs: 15 * MINUTE, setting: 'deviceCodeEntries', env: 'DEVICE_CODE_ENTRY_LIMIT' },
} as const satisfies Record<string, RateLimit>

/**
 * Mails that tell an owner about an attack, per account: at most one per window, so that a burst
 * of wrong codes sends one mail rather than one per code. Fixed.
 */
export const ALERTS = {
  /** Wrong second-factor codes (src/accounts/second-factor/guessing.ts). */
  secondFactorFailures: { prefix: 'alert:second-factor', windowMs: HOUR, max: 1 },
} as const

/** The rule of the alert `alert` for `subject`: one slot per window. */
export function alertRule(alert: (typeof ALERTS)[keyof typeof ALERTS], subject: string): SlotRule {
  return { key: `${alert.prefix}:${subject}`, limit: alert.max, windowMs: alert.windowMs }
}

/** The rule of `limit` for `subject`, its number read from `settings` by the limit's own setting. */
export function rateRule<S extends LimitSetting>(limit: RateLimit<S>, subject: string, settings: Pick<LimitSettings, S>): SlotRule {
  return { key: `${limit.prefix}:${subject}`, limit: settings[limit.setting], windowMs: limit.windowMs }
}

/**
 * What one account may hold or issue, and what one process serves. `setting` is the field of
 * Config (src/config.ts) the caller reads and passes on; quotas without a window count live rows.
 */
export const QUOTAS = {
  /** Applications per user. */
  applicationsPerUser: { setting: 'quotas.applicationsPerUser', env: 'MAX_APPLICATIONS_PER_USER' },
  /** Live access tokens per (user, application); one more revokes the oldest. */
  tokensPerGrant: { setting: 'quotas.tokensPerGrant', env: 'MAX_TOKENS_PER_GRANT' },
  /** Authorization codes per (user, application) in the window. */
  codesPerGrant: { setting: 'quotas.codesPerMinute', env: 'CODE_ISSUE_LIMIT', windowMs: MINUTE },
  /** Live console sessions per user; a log-in with the password beyond it ends the oldest. */
  sessionsPerUser: { setting: 'quotas.sessionsPerUser', env: 'MAX_SESSIONS_PER_USER' },
  /** Open consent requests per user; one more drops the user's oldest. Fixed. */
  pendingPerUser: { max: 10 },
  /** Live pushed authorization requests per application (RFC 9126); one more drops its oldest. Fixed. */
  pushedPerApplication: { max: 100 },
  /** Live device authorizations per application (RFC 8628); one more drops its oldest. Fixed. */
  deviceAuthorizationsPerApplication: { max: 100 },
  /** Passkeys per account (docs/decisions/011-second-factor.md): enough for every device and a spare key. Fixed. */
  passkeysPerUser: { max: 10 },
  /** Revocation streams per application, per process. */
  streamsPerApplication: { setting: 'streams.perApplication', env: 'STREAMS_PER_APPLICATION' },
  /** Revocation streams per process. */
  streamsTotal: { setting: 'streams.total', env: 'STREAMS_TOTAL' },
  /** Unsent output of one revocation stream past which its subscriber is cut. Fixed. */
  streamBufferBytes: { max: 1 << 20 },
} as const

/** How long what Gatehouse issues stays usable. */
export const LIFETIMES = {
  /** An authorization code: the specification §3 (States and transitions), restated in docs/operating/limits.md. */
  authorizationCodeMs: 10 * MINUTE,
  /** A held consent request (docs/oauth-endpoints.md "`GET /oauth/authorize`", "Pending requests"). */
  consentRequestMs: 10 * MINUTE,
  /** A pushed authorization request's request_uri (RFC 9126 2.2: short-lived; "5 to 600 seconds"). */
  pushedRequestMs: MINUTE,
  /** A device code and its user code (RFC 8628 3.2 expires_in; docs/decisions/020-device-codes.md). */
  deviceCodeMs: 10 * MINUTE,
  /** A console session: set by the configuration, not fixed here. */
  session: { setting: 'sessionTtlMs', env: 'SESSION_TTL_HOURS' },
  /** Mailed links, by purpose (docs/accounts.md "Links and what is stored"). */
  emailLinkMs: {
    'verify-email': DAY,
    'reset-password': HOUR,
    'change-email': DAY,
    /** As long as the change it cancels. */
    'cancel-email-change': DAY,
  } satisfies Record<EmailTokenPurpose, number>,
  /** The device cookie of log-in throttling: about 13 months, long enough that a regular user always holds one (OWASP suggests long-lived). */
  deviceCookieMs: 400 * DAY,
  /** A WebAuthn challenge (registration or sign-in): as long as the browser's own timeout we ask for. */
  webauthnChallengeMs: 5 * MINUTE,
  /** A log-in past its password, waiting for the second factor (src/accounts/second-factor/pending-login.ts), and its cookie. */
  pendingLoginMs: 5 * MINUTE,
  /** An authenticator app's secret shown and waiting for its confirming code (src/accounts/second-factor/factors.ts). */
  totpEnrolmentMs: 10 * MINUTE,
} as const

/**
 * How long the janitor keeps a row past the moment that made it dead (its expiry, revocation,
 * window start or event time; src/repositories/janitor.ts names the column). A number is fixed;
 * a string names the JanitorSettings field (src/config.ts) that sets it.
 */
export const RETENTION = {
  /** A day past expiry, for whoever investigates a replay. */
  authorization_codes: DAY,
  /** Windows are at most an hour (RATE_LIMITS); a day later no window still counts on the row. */
  rate_limits: DAY,
  pending_authorizations: 0,
  /** Pushed authorization requests (RFC 9126): useless once expired. */
  pushed_authorization_requests: 0,
  sessions: 0,
  /** Mailed links: useless once expired, used or not. */
  email_tokens: 0,
  /** Second-factor steps (migrations/0010_second_factor.ts): useless once expired. */
  totp_enrolments: 0,
  webauthn_challenges: 0,
  pending_logins: 0,
  /** Signing keys past not_after: retired, and every ID Token they signed has expired. */
  signing_keys: 0,
  /** Device authorizations (RFC 8628): useless once expired, answered or not. */
  device_authorizations: 0,
  /**
   * Refresh tokens past their own expiry, families past their absolute one
   * (docs/decisions/023-refresh-token-grace.md), and DPoP proofs past their iat window
   * (docs/decisions/024-dpop-replay-cache.md): nothing can present them any more.
   */
  refresh_tokens: 0,
  refresh_token_families: 0,
  dpop_proof_jtis: 0,
  /** REVOKED_TOKEN_RETENTION_DAYS. */
  access_tokens: 'revokedTokenRetentionMs',
  /** REVOKED_TOKEN_RETENTION_DAYS past an expiring access token's expiry (docs/expiring-tokens.md). */
  expired_access_tokens: 'revokedTokenRetentionMs',
  /** AUDIT_RETENTION_DAYS. */
  audit_events: 'auditRetentionMs',
  /** CLIENT_ID_METADATA_UNUSED_DAYS since the document's last fetch, no grant, not suspended (docs/agents.md). */
  metadata_clients: 'metadataClientUnusedMs',
} as const satisfies Record<JanitorTable, number | 'revokedTokenRetentionMs' | 'auditRetentionMs' | 'metadataClientUnusedMs'>
