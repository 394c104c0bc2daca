import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SEED_SCOPES, type ScopeCatalogue, ScopeFileError, readScopesFile } from '@gatehouse/verifier/shared'
import type { AccountLimits } from './accounts/context.js'
import type { SecondFactorPolicy } from './accounts/second-factor/policy.js'
import type { PoolSettings } from './db/connect.js'
import type { MailSettings } from './mail/mailer.js'
import type { ClientMetadataSettings } from './oauth/index.js'
import type { StreamLimits } from './revocation/stream-feed.js'
import type { TrustProxy } from './config-values.js'
import { EnvSchema, type Env } from './config-schema.js'
import { type Brand, DEFAULT_ACCENT_COLOR, readBrandLogo } from './lib/brand.js'

export type { TrustProxy } from './config-values.js'

/** Every variable Gatehouse reads; docs/operating/configuration.md has a row for each (test/unit/config.test.ts). */
export const SETTING_NAMES: readonly string[] = Object.freeze(Object.keys(EnvSchema.shape))

export interface Config {
  /** The brand on every page, in the consent text and in mails (SERVICE_NAME). */
  readonly serviceName: string
  /** The accent colour and logo of every page and mail (BRAND_ACCENT_COLOR, BRAND_LOGO_FILE; docs/operating/branding.md). */
  readonly brand: Brand
  readonly port: number
  readonly host: string
  readonly databaseUrl: string | undefined
  /** Where the LISTEN connection and the migrations go (DATABASE_LISTEN_URL); undefined: DATABASE_URL. */
  readonly databaseListenUrl: string | undefined
  /** DML as named prepared statements (DATABASE_PREPARED_STATEMENTS, default true; src/db/prepared-pool.ts). */
  readonly databasePreparedStatements: boolean
  readonly dataDir: string
  /** The issuer and {auth_url}: no trailing slash. */
  readonly publicUrl: string
  readonly cookieSecure: boolean
  readonly sessionTtlMs: number
  /**
   * "Sudo mode": how long a log-in or a later password confirmation lets a session take the
   * sensitive actions (REAUTH_WINDOW_MINUTES; docs/decisions/012-reauthentication-and-policy.md).
   */
  readonly reauthWindowMs: number
  /** Who must have a second factor before using what (REQUIRE_TWO_FACTOR; src/accounts/second-factor/policy.ts). */
  readonly requireSecondFactor: SecondFactorPolicy
  readonly logLevel: string
  /** Passed to Fastify's trustProxy; never `true` (see TRUST_PROXY in src/config-schema.ts). */
  readonly trustProxy: TrustProxy
  /** The PostgreSQL pool (docs/operating/backups-and-upgrades.md "Failures and recovery"); unused with PGlite. */
  readonly dbPool: PoolSettings
  readonly tokenCacheTtlMs: number
  /** How long an ID Token is valid, and a retired signing key stays published (ID_TOKEN_TTL, seconds). */
  readonly idTokenTtlMs: number
  readonly tokenCacheMaxEntries: number
  /** Sessions' users cached per process for remembered consent (src/accounts/sessions/session-cache.ts); 0: none. */
  readonly sessionCacheMaxEntries: number
  /** Log-in throttling and the sign-up limit (docs/operating/limits.md). */
  readonly limits: AccountLimits
  /** Failed client authentications per client_id within a 15-minute window before 429. */
  readonly tokenAuthFailureLimit: number
  /** RFC 8628 3.2: the seconds a device waits between polls at first (DEVICE_CODE_INTERVAL_SECONDS). */
  readonly deviceCodeIntervalSeconds: number
  /** RFC 9449: the proofs' `iat` window (DPOP_PROOF_MAX_AGE_SECONDS) and server nonces (DPOP_NONCE); docs/dpop.md. */
  readonly dpop: { readonly maxAgeSeconds: number; readonly nonce: 'off' | 'required' }
  /** Node's HTTP server timeouts (docs/operating/configuration.md); never unbounded. */
  readonly http: HttpTimeouts
  /**
   * How far V8 lets the old generation grow past what survived the last full collection, in
   * percent (V8's --heap-growing-percent, set by src/server.ts); 0 leaves V8's own factor
   * (docs/performance.md "Memory", docs/scaling.md).
   */
  readonly heapGrowingPercent: number
  /** The janitor's schedule and what it keeps (docs/operating/limits.md). */
  readonly janitor: JanitorSettings
  /** Concurrent revocation streams this process serves (docs/operating/limits.md). */
  readonly streams: StreamLimits
  /** What one account may hold or issue (docs/operating/limits.md). */
  readonly quotas: Quotas
  readonly refresh: RefreshSettings
  /** RESOURCE_TOKEN_TTL_SECONDS_DEFAULT: the lifetime of a token for resources none of whose parties chose one (RFC 8707). */
  readonly resources: { readonly defaultTtlSeconds: number }
  /** How mail leaves (docs/accounts.md "Mail"). */
  readonly mail: MailSettings
  /** GET /metrics needs `Authorization: Bearer <this>`; unset: only loopback clients are answered. */
  readonly metricsToken: string | undefined
  /**
   * SECRET_KEY: what seals stored secrets (TOTP); unset, the embedded database uses a key file and
   * PostgreSQL has no TOTP (src/lib/secret-key.ts). Never logged.
   */
  readonly secretKey: string | undefined
  /** The API's own scopes: SCOPES_FILE read and checked at start-up, or the built-in seed (docs/operating/scopes.md). */
  readonly scopes: ScopeCatalogue
  /**
   * Client ID Metadata Documents (CLIENT_ID_METADATA_*; docs/agents.md): undefined when off, the
   * default, and an https client_id is then an unknown client as any other.
   */
  readonly clientMetadata: ClientMetadataSettings | undefined
}

export interface Quotas {
  /** Applications one user may register. */
  readonly applicationsPerUser: number
  /** Live access tokens per (user, application); issuing one more revokes the oldest. */
  readonly tokensPerGrant: number
  /** Authorization codes issued per (user, application) in a minute. */
  readonly codesPerMinute: number
  /** Live console sessions per user; a log-in beyond it ends the oldest. */
  readonly sessionsPerUser: number
}

/** Refresh tokens (docs/expiring-tokens.md). */
export interface RefreshSettings {
  /** REFRESH_TOKEN_FAMILY_MAX_DAYS, in seconds: a family's absolute lifetime. */
  readonly familyMaxSeconds: number
  /** REFRESH_TOKEN_REUSE_GRACE_SECONDS: how long a retired refresh token may be presented once more. */
  readonly reuseGraceSeconds: number
}

export interface JanitorSettings {
  readonly intervalMs: number
  /** Revoked tokens are deleted this long after their revocation. */
  readonly revokedTokenRetentionMs: number
  /** Audit events are deleted this long after they happened. */
  readonly auditRetentionMs: number
  /** Clients of metadata documents holding no grant are deleted this long after their last fetch (CLIENT_ID_METADATA_UNUSED_DAYS). */
  readonly metadataClientUnusedMs: number
}

export interface HttpTimeouts {
  /** The whole request, headers and body, must arrive within this (slow-client attacks). */
  readonly requestTimeoutMs: number
  /** A connection on which no byte moves either way for this long is closed. */
  readonly connectionTimeoutMs: number
  /** An idle keep-alive connection is closed after this long. */
  readonly keepAliveTimeoutMs: number
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** The process's environment, parsed: the one place that reads process.env (src/server.ts, src/cli.ts). */
export function loadProcessConfig(): Config {
  return loadConfig(process.env)
}

/** PUBLIC_URL without a trailing slash; by default the address Gatehouse listens on, as a browser on this host reaches it. */
function publicUrlOf(e: { PUBLIC_URL?: string | undefined; HOST: string; PORT: number }): string {
  const displayHost = e.HOST === '0.0.0.0' || e.HOST === '::' ? '127.0.0.1' : e.HOST
  return (e.PUBLIC_URL ?? `http://${displayHost.includes(':') ? `[${displayHost}]` : displayHost}:${e.PORT}`).replace(/\/+$/, '')
}

/** Mail settings; MAIL_FROM by default names the service at PUBLIC_URL's host. */
function mailSettingsOf(
  e: {
    SMTP_URL?: string | undefined
    MAIL_FROM?: string | undefined
    SERVICE_NAME: string
    MAIL_OUTBOX_DIR?: string | undefined
    DATA_DIR: string
  },
  publicUrl: string,
): MailSettings {
  return Object.freeze({
    smtpUrl: e.SMTP_URL,
    from: e.MAIL_FROM ?? `${e.SERVICE_NAME.replace(/["\\]/g, '')} <no-reply@${new URL(publicUrl).hostname.replace(/^\[|\]$/g, '')}>`,
    outboxDir: e.MAIL_OUTBOX_DIR ?? join(e.DATA_DIR, 'outbox'),
  })
}

/** The account limits (docs/operating/limits.md); LOGIN_RATE_LIMIT is the older name of LOGIN_FAILURE_LIMIT. */
function accountLimitsOf(e: Env): AccountLimits {
  return Object.freeze({
    loginFailures: e.LOGIN_FAILURE_LIMIT ?? e.LOGIN_RATE_LIMIT ?? 10,
    loginAccountAttack: e.LOGIN_ACCOUNT_ATTACK_LIMIT,
    loginAddressFailures: e.LOGIN_ADDRESS_FAILURE_LIMIT,
    loginAddressAttempts: e.LOGIN_ADDRESS_ATTEMPT_LIMIT,
    signups: e.SIGNUP_LIMIT,
    verificationEmails: e.VERIFICATION_EMAIL_LIMIT,
    passwordResets: e.PASSWORD_RESET_LIMIT,
    passwordResetAddresses: e.PASSWORD_RESET_ADDRESS_LIMIT,
    emailChanges: e.EMAIL_CHANGE_LIMIT,
    emailChangeAddresses: e.EMAIL_CHANGE_ADDRESS_LIMIT,
    webauthnChallenges: e.WEBAUTHN_CHALLENGE_LIMIT,
    secondFactorLockAfter: e.SECOND_FACTOR_LOCK_AFTER,
    deviceCodeEntries: e.DEVICE_CODE_ENTRY_LIMIT,
  })
}

/** The brand settings; the logo file is read here, once, so a bad one stops start-up like any bad setting. */
function brandOf(e: Pick<Env, 'BRAND_ACCENT_COLOR' | 'BRAND_LOGO_FILE'>): Brand {
  let logo
  try {
    logo = e.BRAND_LOGO_FILE === undefined ? undefined : readBrandLogo(e.BRAND_LOGO_FILE)
  } catch (err) {
    throw new ConfigError(`Invalid configuration:\n  BRAND_LOGO_FILE: ${(err as Error).message}`)
  }
  return Object.freeze({ accentColor: e.BRAND_ACCENT_COLOR?.toLowerCase() ?? DEFAULT_ACCENT_COLOR, logo })
}

/** The PostgreSQL pool's bounds (docs/operating/configuration.md). */
function poolOf(e: Env): Config['dbPool'] {
  return Object.freeze({
    max: e.DATABASE_POOL_MAX ?? e.DB_POOL_MAX ?? 10,
    connectTimeoutMs: e.DATABASE_CONNECT_TIMEOUT_MS,
    idleTimeoutMs: e.DATABASE_IDLE_TIMEOUT_MS,
    statementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
  })
}

/** Parses the environment once at start-up; a bad value throws one message naming each variable. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''))
  const result = EnvSchema.safeParse(cleaned)
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`)
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`)
  }
  const e = result.data
  const publicUrl = publicUrlOf(e)
  return Object.freeze({
    serviceName: e.SERVICE_NAME,
    brand: brandOf(e),
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    databaseListenUrl: e.DATABASE_LISTEN_URL,
    databasePreparedStatements: e.DATABASE_PREPARED_STATEMENTS ?? true,
    dataDir: e.DATA_DIR,
    publicUrl,
    cookieSecure: e.COOKIE_SECURE ?? publicUrl.startsWith('https:'),
    sessionTtlMs: e.SESSION_TTL_HOURS * 3600_000,
    reauthWindowMs: e.REAUTH_WINDOW_MINUTES * 60_000,
    requireSecondFactor: e.REQUIRE_TWO_FACTOR,
    logLevel: e.LOG_LEVEL,
    trustProxy: e.TRUST_PROXY ?? false,
    metricsToken: e.METRICS_TOKEN,
    secretKey: e.SECRET_KEY,
    dbPool: poolOf(e),
    tokenCacheTtlMs: e.TOKEN_CACHE_TTL_SECONDS * 1000,
    idTokenTtlMs: e.ID_TOKEN_TTL * 1000,
    tokenCacheMaxEntries: e.TOKEN_CACHE_MAX_ENTRIES,
    sessionCacheMaxEntries: e.SESSION_CACHE_MAX_ENTRIES,
    limits: accountLimitsOf(e),
    tokenAuthFailureLimit: e.TOKEN_AUTH_FAILURE_LIMIT,
    deviceCodeIntervalSeconds: e.DEVICE_CODE_INTERVAL_SECONDS,
    dpop: Object.freeze({ maxAgeSeconds: e.DPOP_PROOF_MAX_AGE_SECONDS, nonce: e.DPOP_NONCE }),
    http: Object.freeze({
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      connectionTimeoutMs: e.HTTP_CONNECTION_TIMEOUT_MS,
      keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    }),
    heapGrowingPercent: e.HEAP_GROWING_PERCENT,
    janitor: janitorOf(e),
    streams: Object.freeze({ perApplication: e.STREAMS_PER_APPLICATION, total: e.STREAMS_TOTAL }),
    quotas: Object.freeze({
      applicationsPerUser: e.MAX_APPLICATIONS_PER_USER,
      tokensPerGrant: e.MAX_TOKENS_PER_GRANT,
      codesPerMinute: e.CODE_ISSUE_LIMIT,
      sessionsPerUser: e.MAX_SESSIONS_PER_USER,
    }),
    refresh: refreshOf(e),
    resources: Object.freeze({ defaultTtlSeconds: e.RESOURCE_TOKEN_TTL_SECONDS_DEFAULT }),
    mail: mailSettingsOf(e, publicUrl),
    scopes: scopesOf(e.SCOPES_FILE),
    clientMetadata: clientMetadataOf(e),
  })
}

/** CLIENT_ID_METADATA_*: the extra CA file is read here, once, so a bad one stops start-up like any bad setting. */
function clientMetadataOf(e: Env): ClientMetadataSettings | undefined {
  if (e.CLIENT_ID_METADATA_DOCUMENTS !== true) return undefined
  let extraCa: string | undefined
  if (e.CLIENT_ID_METADATA_EXTRA_CA_FILE !== undefined) {
    try {
      extraCa = readFileSync(e.CLIENT_ID_METADATA_EXTRA_CA_FILE, 'utf8')
    } catch (err) {
      throw new ConfigError(`Invalid configuration:\n  CLIENT_ID_METADATA_EXTRA_CA_FILE: cannot be read (${(err as Error).message})`)
    }
    if (!extraCa.includes('-----BEGIN CERTIFICATE-----')) {
      throw new ConfigError('Invalid configuration:\n  CLIENT_ID_METADATA_EXTRA_CA_FILE: must hold PEM certificates')
    }
  }
  return Object.freeze({
    allowPrivateAddresses: e.CLIENT_ID_METADATA_ALLOW_PRIVATE_ADDRESSES ?? false,
    hosts: Object.freeze({ allowed: e.CLIENT_ID_METADATA_ALLOWED_HOSTS ?? [], blocked: e.CLIENT_ID_METADATA_BLOCKED_HOSTS ?? [] }),
    timeoutMs: e.CLIENT_ID_METADATA_FETCH_TIMEOUT_MS,
    maxBytes: e.CLIENT_ID_METADATA_MAX_BYTES,
    maxCacheSeconds: e.CLIENT_ID_METADATA_MAX_CACHE_SECONDS,
    maxClients: e.CLIENT_ID_METADATA_MAX_CLIENTS,
    unusedDays: e.CLIENT_ID_METADATA_UNUSED_DAYS,
    extraCa,
  })
}

/** The janitor's schedule and retention periods (docs/operating/limits.md). */
function janitorOf(e: Env): JanitorSettings {
  return Object.freeze({
    intervalMs: e.JANITOR_INTERVAL_SECONDS * 1000,
    revokedTokenRetentionMs: e.REVOKED_TOKEN_RETENTION_DAYS * 86_400_000,
    auditRetentionMs: e.AUDIT_RETENTION_DAYS * 86_400_000,
    metadataClientUnusedMs: e.CLIENT_ID_METADATA_UNUSED_DAYS * 86_400_000,
  })
}

/** REFRESH_TOKEN_FAMILY_MAX_DAYS and REFRESH_TOKEN_REUSE_GRACE_SECONDS (docs/expiring-tokens.md). */
function refreshOf(e: Env): RefreshSettings {
  return Object.freeze({
    familyMaxSeconds: e.REFRESH_TOKEN_FAMILY_MAX_DAYS * 86_400,
    reuseGraceSeconds: e.REFRESH_TOKEN_REUSE_GRACE_SECONDS,
  })
}

/** SCOPES_FILE, read once: a file that cannot be used stops start-up with its name and the problem. */
function scopesOf(path: string | undefined): ScopeCatalogue {
  if (path === undefined) return SEED_SCOPES
  try {
    return readScopesFile(path)
  } catch (err) {
    if (err instanceof ScopeFileError) throw new ConfigError(`Invalid configuration:\n  SCOPES_FILE: ${err.message}`)
    throw err
  }
}
