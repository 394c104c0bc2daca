import { z } from 'zod'
import { SECOND_FACTOR_POLICIES } from './accounts/second-factor/policy.js'
import { accentColorProblem } from './lib/brand.js'
import { bool, hostList, nonNegativeInt, port, positiveInt, postgresUrl, trustProxy } from './config-values.js'

/*
 * Every environment variable Gatehouse reads, with its bounds and default: the one schema
 * src/config.ts parses the environment with, once, at start-up. docs/operating/configuration.md has a
 * row for each (test/unit/config.test.ts).
 */
export const EnvSchema = z.object({
  PORT: port.default(3000),
  HOST: z.string().min(1, 'must not be empty').default('127.0.0.1'),
  DATABASE_URL: postgresUrl.optional(),
  /** A direct connection for LISTEN when DATABASE_URL is a transaction pooler (docs/operating/pgbouncer.md). */
  DATABASE_LISTEN_URL: postgresUrl.optional(),
  /** False: statements go unnamed, as a transaction-pooling PgBouncer needs (docs/operating/pgbouncer.md). */
  DATABASE_PREPARED_STATEMENTS: bool.optional(),
  DATA_DIR: z.string().min(1, 'must not be empty').default('./data'),
  PUBLIC_URL: z
    .string()
    .refine((v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol), 'must be an http(s) URL')
    .refine((v) => !URL.canParse(v) || (new URL(v).search === '' && new URL(v).hash === ''), 'must not have a query or fragment')
    .optional(),
  COOKIE_SECURE: bool.optional(),
  SESSION_TTL_HOURS: positiveInt(24 * 90).default(24 * 14),
  REAUTH_WINDOW_MINUTES: positiveInt(24 * 60).default(10),
  REQUIRE_TWO_FACTOR: z.enum(SECOND_FACTOR_POLICIES, { message: 'must be one of none, operators, developers, all' }).default('operators'),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      message: 'must be one of fatal, error, warn, info, debug, trace, silent',
    })
    .default('info'),
  TRUST_PROXY: trustProxy.optional(),
  DATABASE_POOL_MAX: positiveInt(1000).optional(),
  /** The name before 0.2; DATABASE_POOL_MAX wins when both are set. */
  DB_POOL_MAX: positiveInt(1000).optional(),
  DATABASE_CONNECT_TIMEOUT_MS: positiveInt(60_000).default(3_000),
  DATABASE_IDLE_TIMEOUT_MS: positiveInt(3_600_000).default(30_000),
  DATABASE_STATEMENT_TIMEOUT_MS: nonNegativeInt(3_600_000).default(10_000),
  TOKEN_CACHE_TTL_SECONDS: positiveInt(300).default(60),
  ID_TOKEN_TTL: positiveInt(86_400).default(3600),
  TOKEN_CACHE_MAX_ENTRIES: positiveInt().default(10_000),
  /**
   * At most what a process can fill in the cache's minute (SESSION_CACHE_TTL_MS): remembered
   * consent's rate on one process (bench/results/LATEST.md) bounds that below 100,000 sessions;
   * past that an entry expires before it could be found. The memory a full cache holds is in
   * docs/performance.md "Memory".
   */
  SESSION_CACHE_MAX_ENTRIES: nonNegativeInt(100_000).default(10_000),
  LOGIN_FAILURE_LIMIT: positiveInt().optional(),
  /** The name before 0.3, when it counted every attempt; LOGIN_FAILURE_LIMIT wins when both are set. */
  LOGIN_RATE_LIMIT: positiveInt().optional(),
  LOGIN_ACCOUNT_ATTACK_LIMIT: positiveInt().default(100),
  LOGIN_ADDRESS_FAILURE_LIMIT: positiveInt().default(100),
  LOGIN_ADDRESS_ATTEMPT_LIMIT: positiveInt().default(1000),
  SIGNUP_LIMIT: positiveInt().default(10),
  WEBAUTHN_CHALLENGE_LIMIT: positiveInt().default(30),
  /** Consecutive wrong second-factor codes before the authenticator app's codes are locked (docs/decisions/011-second-factor.md). */
  SECOND_FACTOR_LOCK_AFTER: positiveInt(1000).default(20),
  TOKEN_AUTH_FAILURE_LIMIT: positiveInt().default(20),
  /** RFC 8628 3.2 `interval`: seconds a device waits between polls; 1 to 60 (docs/decisions/020-device-codes.md). */
  DEVICE_CODE_INTERVAL_SECONDS: positiveInt(60).default(5),
  /** User codes typed on /device per client address, and per account, in 15 minutes (RFC 8628 5.1). */
  DEVICE_CODE_ENTRY_LIMIT: positiveInt(1000).default(20),
  /** RFC 9449 §11.1: how far a DPoP proof's `iat` may be from now, either way (docs/dpop.md). */
  DPOP_PROOF_MAX_AGE_SECONDS: positiveInt(600).default(60),
  /** RFC 9449 §8: whether token and PAR requests' proofs must carry a nonce this server provided (docs/dpop.md). */
  DPOP_NONCE: z.enum(['off', 'required'], { message: 'must be one of off, required' }).default('off'),
  HTTP_REQUEST_TIMEOUT_MS: positiveInt(3_600_000).default(30_000),
  HTTP_CONNECTION_TIMEOUT_MS: positiveInt(3_600_000).default(60_000),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: positiveInt(3_600_000).default(72_000),
  HEAP_GROWING_PERCENT: nonNegativeInt(300).default(50),
  JANITOR_INTERVAL_SECONDS: positiveInt(86_400).default(300),
  REVOKED_TOKEN_RETENTION_DAYS: positiveInt(3650).default(30),
  AUDIT_RETENTION_DAYS: positiveInt(3650).default(90),
  STREAMS_PER_APPLICATION: positiveInt(1000).default(4),
  STREAMS_TOTAL: positiveInt(100_000).default(1000),
  SERVICE_NAME: z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(60, 'must be at most 60 characters')
    .refine((v) => !/[\x00-\x1f\x7f-\x9f]/.test(v), 'must not contain control characters')
    .default('Gatehouse'),
  /** Links, buttons and focus rings on every page and mail; refused when text on it would fail WCAG AA (src/lib/brand.ts). */
  BRAND_ACCENT_COLOR: z
    .string()
    .trim()
    .superRefine((v, ctx) => {
      const problem = accentColorProblem(v)
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem })
    })
    .optional(),
  /** A PNG or SVG shown beside SERVICE_NAME on every page and mail; read and checked once at start-up (src/lib/brand.ts). */
  BRAND_LOGO_FILE: z.string().min(1, 'must not be empty').optional(),
  MAX_APPLICATIONS_PER_USER: positiveInt(100_000).default(25),
  MAX_TOKENS_PER_GRANT: positiveInt(10_000).default(10),
  /** A refresh-token family's absolute lifetime in days: no rotation extends it (docs/expiring-tokens.md). */
  REFRESH_TOKEN_FAMILY_MAX_DAYS: positiveInt(3650).default(365),
  /** Seconds a retired refresh token may be presented once more for the answer lost in flight; 0 = none (docs/decisions/023-refresh-token-grace.md). */
  REFRESH_TOKEN_REUSE_GRACE_SECONDS: nonNegativeInt(300).default(10),
  /**
   * RFC 8707: the lifetime of a token minted for resources when neither the client application nor
   * the resource server chose one; 60 s to 7 days (docs/decisions/025-audiences.md).
   */
  RESOURCE_TOKEN_TTL_SECONDS_DEFAULT: positiveInt(604_800).min(60, 'must be at least 60').default(3600),
  MAX_SESSIONS_PER_USER: positiveInt(10_000).default(50),
  CODE_ISSUE_LIMIT: positiveInt(100_000).default(60),
  SMTP_URL: z
    .string()
    .refine(
      (v) => /^smtps?:\/\//.test(v) && URL.canParse(v) && new URL(v).hostname !== '',
      'must be an smtp:// or smtps:// URL with a host',
    )
    .optional(),
  MAIL_FROM: z
    .string()
    .trim()
    .max(320, 'must be at most 320 characters')
    .refine(
      (v) => !/[\u0000-\u001f\u007f-\u009f]/.test(v) && /@[^@\s>]+>?$/.test(v),
      'must be an address, e.g. Gatehouse <no-reply@auth.example.com>',
    )
    .optional(),
  MAIL_OUTBOX_DIR: z.string().min(1, 'must not be empty').optional(),
  VERIFICATION_EMAIL_LIMIT: positiveInt().default(5),
  PASSWORD_RESET_LIMIT: positiveInt().default(5),
  PASSWORD_RESET_ADDRESS_LIMIT: positiveInt().default(20),
  EMAIL_CHANGE_LIMIT: positiveInt().default(5),
  EMAIL_CHANGE_ADDRESS_LIMIT: positiveInt().default(5),
  METRICS_TOKEN: z
    .string()
    .trim()
    .min(32, 'must be at least 32 characters (e.g. openssl rand -hex 32)')
    .max(512, 'must be at most 512 characters')
    .refine((v) => /^[\x21-\x7e]+$/.test(v), 'must be printable ASCII without spaces')
    .optional(),
  /**
   * Client ID Metadata Documents (docs/agents.md): an https client_id is fetched as the client's
   * own description, so a client nobody registered may ask for consent. Off by default
   * (docs/decisions/026-client-metadata-documents.md).
   */
  CLIENT_ID_METADATA_DOCUMENTS: bool.optional(),
  /** Development only: documents on loopback and private addresses, and http to loopback. Never link-local. */
  CLIENT_ID_METADATA_ALLOW_PRIVATE_ADDRESSES: bool.optional(),
  /** Comma-separated host names or `*.suffix`: only these are fetched; unset, any host not blocked. */
  CLIENT_ID_METADATA_ALLOWED_HOSTS: hostList.optional(),
  /** Comma-separated host names or `*.suffix` never fetched; a block wins over an allow. */
  CLIENT_ID_METADATA_BLOCKED_HOSTS: hostList.optional(),
  /** The longest a fetched document is reused, whatever its Cache-Control says; at least 60. */
  CLIENT_ID_METADATA_MAX_CACHE_SECONDS: positiveInt(7 * 86_400)
    .min(60, 'must be at least 60')
    .default(3600),
  /** The whole fetch, from the name lookup to the last byte. */
  CLIENT_ID_METADATA_FETCH_TIMEOUT_MS: positiveInt(30_000).default(5_000),
  /** The largest document accepted; the draft suggests 5 KiB. */
  CLIENT_ID_METADATA_MAX_BYTES: positiveInt(1_048_576).default(5_120),
  /** Clients of metadata documents stored at most; a new one beyond is refused until the janitor removes unused ones. */
  CLIENT_ID_METADATA_MAX_CLIENTS: positiveInt(1_000_000).default(10_000),
  /** Days after its last fetch a client of a metadata document holding no grant is deleted by the janitor. */
  CLIENT_ID_METADATA_UNUSED_DAYS: positiveInt(3650).default(30),
  /** Development: a PEM file of certificates trusted for these fetches only, besides the system's. */
  CLIENT_ID_METADATA_EXTRA_CA_FILE: z.string().min(1, 'must not be empty').optional(),
  /**
   * The key-encryption key of sealed secrets (src/lib/sealed-box.ts): any text of at least 32
   * characters, e.g. openssl rand -hex 32. Unset with the embedded database: DATA_DIR/secret-key.
   */
  /**
   * The API's own scopes: a JSON file of names, plain words and implications, read once at
   * start-up (docs/operating/scopes.md). Unset: the built-in six (docs/decisions/006-scopes.md).
   */
  SCOPES_FILE: z.string().min(1, 'must not be empty').optional(),
  SECRET_KEY: z
    .string()
    .min(32, 'must be at least 32 characters (e.g. openssl rand -hex 32)')
    .max(512, 'must be at most 512 characters')
    .optional(),
})

/** The environment as parsed, before src/config.ts shapes it into a Config. */
export type Env = z.output<typeof EnvSchema>
