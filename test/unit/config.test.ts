import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { SEED_SCOPES } from '@gatehouse/verifier/shared'
import { SETTING_NAMES, loadConfig } from '../../src/config.js'
import { configRefusal } from '../helpers/config-refusal.js'

describe('loadConfig', () => {
  it('works with nothing set: PGlite in ./data on 127.0.0.1:3000', () => {
    expect(loadConfig({})).toEqual({
      serviceName: 'Gatehouse',
      brand: { accentColor: '#0969da', logo: undefined },
      port: 3000,
      host: '127.0.0.1',
      databaseUrl: undefined,
      databaseListenUrl: undefined,
      databasePreparedStatements: true,
      dataDir: './data',
      publicUrl: 'http://127.0.0.1:3000',
      cookieSecure: false,
      sessionTtlMs: 14 * 24 * 3600_000,
      reauthWindowMs: 10 * 60_000,
      requireSecondFactor: 'operators',
      scopes: SEED_SCOPES,
      logLevel: 'info',
      trustProxy: false,
      dbPool: { max: 10, connectTimeoutMs: 3_000, idleTimeoutMs: 30_000, statementTimeoutMs: 10_000 },
      tokenCacheTtlMs: 60_000,
      idTokenTtlMs: 3_600_000,
      tokenCacheMaxEntries: 10_000,
      sessionCacheMaxEntries: 10_000,
      limits: {
        loginFailures: 10,
        loginAccountAttack: 100,
        loginAddressFailures: 100,
        loginAddressAttempts: 1000,
        signups: 10,
        verificationEmails: 5,
        passwordResets: 5,
        passwordResetAddresses: 20,
        emailChanges: 5,
        emailChangeAddresses: 5,
        webauthnChallenges: 30,
        secondFactorLockAfter: 20,
        deviceCodeEntries: 20,
      },
      tokenAuthFailureLimit: 20,
      deviceCodeIntervalSeconds: 5,
      dpop: { maxAgeSeconds: 60, nonce: 'off' },
      http: { requestTimeoutMs: 30_000, connectionTimeoutMs: 60_000, keepAliveTimeoutMs: 72_000 },
      heapGrowingPercent: 50,
      janitor: {
        intervalMs: 300_000,
        revokedTokenRetentionMs: 30 * 86_400_000,
        auditRetentionMs: 90 * 86_400_000,
        metadataClientUnusedMs: 30 * 86_400_000,
      },
      streams: { perApplication: 4, total: 1000 },
      quotas: { applicationsPerUser: 25, tokensPerGrant: 10, codesPerMinute: 60, sessionsPerUser: 50 },
      refresh: { familyMaxSeconds: 365 * 86_400, reuseGraceSeconds: 10 },
      resources: { defaultTtlSeconds: 3600 },
      mail: { smtpUrl: undefined, from: 'Gatehouse <no-reply@127.0.0.1>', outboxDir: 'data/outbox' },
    })
  })

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      REFRESH_TOKEN_FAMILY_MAX_DAYS: '30',
      REFRESH_TOKEN_REUSE_GRACE_SECONDS: '0',
      RESOURCE_TOKEN_TTL_SECONDS_DEFAULT: '600',
      DATABASE_URL: 'postgres://gatehouse:pw@db:5432/gatehouse',
      DATABASE_LISTEN_URL: 'postgres://gatehouse:pw@db-direct:5432/gatehouse',
      DATABASE_PREPARED_STATEMENTS: 'false',
      DATA_DIR: '/var/lib/gatehouse',
      PUBLIC_URL: 'https://auth.example.com/',
      SESSION_TTL_HOURS: '8',
      LOG_LEVEL: 'warn',
      TRUST_PROXY: '10.0.0.0/8, 2001:db8::1',
      DATABASE_POOL_MAX: '20',
      DATABASE_CONNECT_TIMEOUT_MS: '1500',
      DATABASE_IDLE_TIMEOUT_MS: '60000',
      DATABASE_STATEMENT_TIMEOUT_MS: '0',
      TOKEN_CACHE_TTL_SECONDS: '300',
      TOKEN_CACHE_MAX_ENTRIES: '500',
      LOGIN_FAILURE_LIMIT: '5',
      LOGIN_ACCOUNT_ATTACK_LIMIT: '50',
      LOGIN_ADDRESS_FAILURE_LIMIT: '60',
      LOGIN_ADDRESS_ATTEMPT_LIMIT: '500',
      SIGNUP_LIMIT: '3',
      TOKEN_AUTH_FAILURE_LIMIT: '7',
      DEVICE_CODE_INTERVAL_SECONDS: '2',
      DPOP_PROOF_MAX_AGE_SECONDS: '30',
      DPOP_NONCE: 'required',
      DEVICE_CODE_ENTRY_LIMIT: '9',
      HTTP_REQUEST_TIMEOUT_MS: '5000',
      HTTP_CONNECTION_TIMEOUT_MS: '20000',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '65000',
      HEAP_GROWING_PERCENT: '0',
      SESSION_CACHE_MAX_ENTRIES: '0',
      JANITOR_INTERVAL_SECONDS: '60',
      REVOKED_TOKEN_RETENTION_DAYS: '7',
      AUDIT_RETENTION_DAYS: '365',
      STREAMS_PER_APPLICATION: '2',
      STREAMS_TOTAL: '50',
      MAX_APPLICATIONS_PER_USER: '5',
      MAX_TOKENS_PER_GRANT: '3',
      MAX_SESSIONS_PER_USER: '7',
      CODE_ISSUE_LIMIT: '30',
      SERVICE_NAME: 'Team Auth',
      SMTP_URL: 'smtps://mailer:secret@smtp.example.com:465',
      MAIL_FROM: 'Team Auth <auth@example.com>',
      MAIL_OUTBOX_DIR: '/tmp/outbox',
      VERIFICATION_EMAIL_LIMIT: '2',
      PASSWORD_RESET_LIMIT: '3',
      PASSWORD_RESET_ADDRESS_LIMIT: '9',
      EMAIL_CHANGE_LIMIT: '4',
      EMAIL_CHANGE_ADDRESS_LIMIT: '6',
      WEBAUTHN_CHALLENGE_LIMIT: '12',
      SECOND_FACTOR_LOCK_AFTER: '15',
    })
    expect(config).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      databaseUrl: 'postgres://gatehouse:pw@db:5432/gatehouse',
      databaseListenUrl: 'postgres://gatehouse:pw@db-direct:5432/gatehouse',
      databasePreparedStatements: false,
      dataDir: '/var/lib/gatehouse',
      publicUrl: 'https://auth.example.com',
      cookieSecure: true,
      sessionTtlMs: 8 * 3600_000,
      logLevel: 'warn',
      trustProxy: ['10.0.0.0/8', '2001:db8::1'],
      dbPool: { max: 20, connectTimeoutMs: 1_500, idleTimeoutMs: 60_000, statementTimeoutMs: 0 },
      tokenCacheTtlMs: 300_000,
      idTokenTtlMs: 3_600_000,
      tokenCacheMaxEntries: 500,
      sessionCacheMaxEntries: 0,
      limits: {
        loginFailures: 5,
        loginAccountAttack: 50,
        loginAddressFailures: 60,
        loginAddressAttempts: 500,
        signups: 3,
        verificationEmails: 2,
        passwordResets: 3,
        passwordResetAddresses: 9,
        emailChanges: 4,
        emailChangeAddresses: 6,
        webauthnChallenges: 12,
        secondFactorLockAfter: 15,
        deviceCodeEntries: 9,
      },
      tokenAuthFailureLimit: 7,
      deviceCodeIntervalSeconds: 2,
      dpop: { maxAgeSeconds: 30, nonce: 'required' },
      http: { requestTimeoutMs: 5_000, connectionTimeoutMs: 20_000, keepAliveTimeoutMs: 65_000 },
      heapGrowingPercent: 0,
      janitor: { intervalMs: 60_000, revokedTokenRetentionMs: 7 * 86_400_000, auditRetentionMs: 365 * 86_400_000 },
      streams: { perApplication: 2, total: 50 },
      quotas: { applicationsPerUser: 5, tokensPerGrant: 3, codesPerMinute: 30, sessionsPerUser: 7 },
      refresh: { familyMaxSeconds: 30 * 86_400, reuseGraceSeconds: 0 },
      resources: { defaultTtlSeconds: 600 },
      mail: { smtpUrl: 'smtps://mailer:secret@smtp.example.com:465', from: 'Team Auth <auth@example.com>', outboxDir: '/tmp/outbox' },
    })
    expect(Object.isFrozen(config)).toBe(true)
    expect(Object.isFrozen(config.http)).toBe(true)
  })

  it('derives the public URL from HOST and PORT, and lets COOKIE_SECURE override the scheme', () => {
    expect(loadConfig({ HOST: '::', PORT: '4000' }).publicUrl).toBe('http://127.0.0.1:4000')
    expect(loadConfig({ HOST: '::1' }).publicUrl).toBe('http://[::1]:3000')
    expect(loadConfig({ PUBLIC_URL: 'https://auth.example.com', COOKIE_SECURE: 'false' }).cookieSecure).toBe(false)
    expect(loadConfig({ COOKIE_SECURE: '1' }).cookieSecure).toBe(true)
  })

  it('puts the outbox under DATA_DIR and mails from the public host, unless told otherwise', () => {
    expect(loadConfig({ DATA_DIR: '/var/lib/gatehouse', PUBLIC_URL: 'https://auth.example.com' }).mail).toEqual({
      smtpUrl: undefined,
      from: 'Gatehouse <no-reply@auth.example.com>',
      outboxDir: '/var/lib/gatehouse/outbox',
    })
    expect(loadConfig({ SERVICE_NAME: 'Team "Auth"' }).mail.from).toBe('Team Auth <no-reply@127.0.0.1>')
  })

  it('still reads the pool size under its former name, DB_POOL_MAX, when DATABASE_POOL_MAX is unset', () => {
    expect(loadConfig({ DB_POOL_MAX: '7' }).dbPool.max).toBe(7)
    expect(loadConfig({ DB_POOL_MAX: '7', DATABASE_POOL_MAX: '9' }).dbPool.max).toBe(9)
  })

  it('still reads LOGIN_RATE_LIMIT, the former name of LOGIN_FAILURE_LIMIT, when that is unset', () => {
    expect(loadConfig({ LOGIN_RATE_LIMIT: '4' }).limits.loginFailures).toBe(4)
    expect(loadConfig({ LOGIN_RATE_LIMIT: '4', LOGIN_FAILURE_LIMIT: '6' }).limits.loginFailures).toBe(6)
  })

  it('reads TRUST_PROXY as no proxy, a hop count, or a list of addresses and CIDRs', () => {
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false)
    expect(loadConfig({ TRUST_PROXY: '0' }).trustProxy).toBe(false)
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(1)
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2)
    expect(loadConfig({ TRUST_PROXY: '192.0.2.10' }).trustProxy).toEqual(['192.0.2.10'])
    expect(loadConfig({ TRUST_PROXY: 'loopback,fd00::/8, 172.16.0.0/12' }).trustProxy).toEqual(['loopback', 'fd00::/8', '172.16.0.0/12'])
  })

  it.each(['true', 'TRUE', 'True', ' tRuE '])('refuses TRUST_PROXY=%j at start-up, saying why', (value) => {
    const text = configRefusal({ TRUST_PROXY: value })
    expect(text).toContain('TRUST_PROXY: true would trust every hop')
    expect(text).toContain('X-Forwarded-For')
  })

  it.each(['0.0.0.0/0', '::/0', '10.0.0.1, ::ffff:0:0/96', '::/64', '128.0.0.0/0'])(
    'refuses TRUST_PROXY=%j, a range covering every address, with the explanation given for true',
    (value) => {
      const text = configRefusal({ TRUST_PROXY: value })
      expect(text).toContain('covers every address: it would trust every hop')
      expect(text).toContain('X-Forwarded-For')
    },
  )

  it('accepts ranges that do not cover every address', () => {
    expect(loadConfig({ TRUST_PROXY: '0.0.0.0/1, ::ffff:10.0.0.0/104, 2001:db8::/32' }).trustProxy).toEqual([
      '0.0.0.0/1',
      '::ffff:10.0.0.0/104',
      '2001:db8::/32',
    ])
  })

  it('reads REAUTH_WINDOW_MINUTES and REQUIRE_TWO_FACTOR', () => {
    expect(loadConfig({ REAUTH_WINDOW_MINUTES: '5', REQUIRE_TWO_FACTOR: 'all' })).toMatchObject({
      reauthWindowMs: 5 * 60_000,
      requireSecondFactor: 'all',
    })
    for (const policy of ['none', 'operators', 'developers', 'all']) {
      expect(loadConfig({ REQUIRE_TWO_FACTOR: policy }).requireSecondFactor).toBe(policy)
    }
  })

  it('leaves Client ID Metadata Documents off by default, and reads their settings when on (docs/agents.md)', () => {
    expect(loadConfig({}).clientMetadata).toBeUndefined()
    expect(loadConfig({ CLIENT_ID_METADATA_ALLOWED_HOSTS: 'a.example' }).clientMetadata).toBeUndefined()
    expect(loadConfig({ CLIENT_ID_METADATA_DOCUMENTS: 'true' }).clientMetadata).toEqual({
      allowPrivateAddresses: false,
      hosts: { allowed: [], blocked: [] },
      timeoutMs: 5_000,
      maxBytes: 5_120,
      maxCacheSeconds: 3600,
      maxClients: 10_000,
      unusedDays: 30,
      extraCa: undefined,
    })
    const caFile = join(import.meta.dirname, '../../packages/verifier/package.json')
    expect(configRefusal({ CLIENT_ID_METADATA_DOCUMENTS: 'true', CLIENT_ID_METADATA_EXTRA_CA_FILE: caFile })).toContain(
      'CLIENT_ID_METADATA_EXTRA_CA_FILE: must hold PEM certificates',
    )
    expect(
      loadConfig({
        CLIENT_ID_METADATA_DOCUMENTS: '1',
        CLIENT_ID_METADATA_ALLOW_PRIVATE_ADDRESSES: 'true',
        CLIENT_ID_METADATA_ALLOWED_HOSTS: ' Claude.AI, *.assistant.example ,,',
        CLIENT_ID_METADATA_BLOCKED_HOSTS: 'bad.assistant.example',
        CLIENT_ID_METADATA_FETCH_TIMEOUT_MS: '250',
        CLIENT_ID_METADATA_MAX_BYTES: '2048',
        CLIENT_ID_METADATA_MAX_CACHE_SECONDS: '60',
        CLIENT_ID_METADATA_MAX_CLIENTS: '5',
        CLIENT_ID_METADATA_UNUSED_DAYS: '2',
      }).clientMetadata,
    ).toMatchObject({
      allowPrivateAddresses: true,
      hosts: { allowed: ['claude.ai', '*.assistant.example'], blocked: ['bad.assistant.example'] },
      timeoutMs: 250,
      maxBytes: 2048,
      maxCacheSeconds: 60,
      maxClients: 5,
      unusedDays: 2,
    })
  })

  it.each([
    ['CLIENT_ID_METADATA_DOCUMENTS', 'on', 'CLIENT_ID_METADATA_DOCUMENTS: must be true or false'],
    [
      'CLIENT_ID_METADATA_ALLOWED_HOSTS',
      'https://a.example',
      'CLIENT_ID_METADATA_ALLOWED_HOSTS: must be comma-separated host names, or *.suffix',
    ],
    [
      'CLIENT_ID_METADATA_BLOCKED_HOSTS',
      'a.*.example',
      'CLIENT_ID_METADATA_BLOCKED_HOSTS: must be comma-separated host names, or *.suffix',
    ],
    ['CLIENT_ID_METADATA_MAX_CACHE_SECONDS', '59', 'CLIENT_ID_METADATA_MAX_CACHE_SECONDS: must be at least 60'],
    ['CLIENT_ID_METADATA_FETCH_TIMEOUT_MS', '30001', 'CLIENT_ID_METADATA_FETCH_TIMEOUT_MS: must be at most 30000'],
    ['CLIENT_ID_METADATA_MAX_BYTES', '0', 'CLIENT_ID_METADATA_MAX_BYTES: must be positive'],
  ])('refuses %s=%s', (name, value, message) => {
    expect(configRefusal({ [name]: value })).toContain(message)
  })

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '' })).toMatchObject({ port: 3000, databaseUrl: undefined })
  })

  it.each([
    ['PORT', 'abc', 'PORT: must be a number'],
    ['REAUTH_WINDOW_MINUTES', '0', 'REAUTH_WINDOW_MINUTES: must be positive'],
    ['REAUTH_WINDOW_MINUTES', '1441', 'REAUTH_WINDOW_MINUTES: must be at most 1440'],
    ['REQUIRE_TWO_FACTOR', 'always', 'REQUIRE_TWO_FACTOR: must be one of none, operators, developers, all'],
    ['PORT', '3.5', 'PORT: must be a whole number'],
    ['PORT', '70000', 'PORT: must be between 0 and 65535'],
    ['PORT', '-1', 'PORT: must be between 0 and 65535'],
    ['DATABASE_URL', 'mysql://db/gatehouse', 'DATABASE_URL: must be a postgres:// or postgresql:// URL'],
    ['DATABASE_URL', 'localhost:5432/gatehouse', 'DATABASE_URL: must be a postgres:// or postgresql:// URL'],
    ['DATABASE_LISTEN_URL', 'pgbouncer:6432/gatehouse', 'DATABASE_LISTEN_URL: must be a postgres:// or postgresql:// URL'],
    ['DATABASE_PREPARED_STATEMENTS', 'no', 'DATABASE_PREPARED_STATEMENTS: must be true or false'],
    ['PUBLIC_URL', 'auth.example.com', 'PUBLIC_URL: must be an http(s) URL'],
    ['PUBLIC_URL', 'ftp://auth.example.com', 'PUBLIC_URL: must be an http(s) URL'],
    ['PUBLIC_URL', 'https://auth.example.com/?x=1', 'PUBLIC_URL: must not have a query or fragment'],
    ['PUBLIC_URL', 'https://auth.example.com/#top', 'PUBLIC_URL: must not have a query or fragment'],
    ['COOKIE_SECURE', 'yes', 'COOKIE_SECURE: must be true or false'],
    ['SESSION_TTL_HOURS', '0', 'SESSION_TTL_HOURS: must be positive'],
    ['SESSION_TTL_HOURS', '10000', 'SESSION_TTL_HOURS: must be at most 2160'],
    ['SESSION_TTL_HOURS', 'forever', 'SESSION_TTL_HOURS: must be a number'],
    ['LOG_LEVEL', 'verbose', 'LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent'],
    ['TRUST_PROXY', 'maybe', 'TRUST_PROXY: must be false, a number of hops, or a comma-separated list'],
    ['TRUST_PROXY', '10.0.0.0/33', 'TRUST_PROXY: must be false, a number of hops, or a comma-separated list'],
    ['TRUST_PROXY', '10.0.0.1,*', 'TRUST_PROXY: must be false, a number of hops, or a comma-separated list'],
    ['TRUST_PROXY', '-1', 'TRUST_PROXY: must be false, a number of hops, or a comma-separated list'],
    ['DATABASE_POOL_MAX', '0', 'DATABASE_POOL_MAX: must be positive'],
    ['DATABASE_POOL_MAX', '5000', 'DATABASE_POOL_MAX: must be at most 1000'],
    ['DB_POOL_MAX', '0', 'DB_POOL_MAX: must be positive'],
    ['DATABASE_CONNECT_TIMEOUT_MS', '0', 'DATABASE_CONNECT_TIMEOUT_MS: must be positive'],
    ['DATABASE_IDLE_TIMEOUT_MS', 'soon', 'DATABASE_IDLE_TIMEOUT_MS: must be a number'],
    ['DATABASE_STATEMENT_TIMEOUT_MS', '-1', 'DATABASE_STATEMENT_TIMEOUT_MS: must not be negative'],
    ['TOKEN_CACHE_TTL_SECONDS', '301', 'TOKEN_CACHE_TTL_SECONDS: must be at most 300'],
    ['TOKEN_CACHE_TTL_SECONDS', '1.5', 'TOKEN_CACHE_TTL_SECONDS: must be a whole number'],
    ['TOKEN_CACHE_MAX_ENTRIES', '-5', 'TOKEN_CACHE_MAX_ENTRIES: must be positive'],
    ['LOGIN_RATE_LIMIT', 'ten', 'LOGIN_RATE_LIMIT: must be a number'],
    ['LOGIN_FAILURE_LIMIT', '0', 'LOGIN_FAILURE_LIMIT: must be positive'],
    ['LOGIN_ACCOUNT_ATTACK_LIMIT', '1.5', 'LOGIN_ACCOUNT_ATTACK_LIMIT: must be a whole number'],
    ['LOGIN_ADDRESS_FAILURE_LIMIT', 'many', 'LOGIN_ADDRESS_FAILURE_LIMIT: must be a number'],
    ['LOGIN_ADDRESS_ATTEMPT_LIMIT', '0', 'LOGIN_ADDRESS_ATTEMPT_LIMIT: must be positive'],
    ['WEBAUTHN_CHALLENGE_LIMIT', '0', 'WEBAUTHN_CHALLENGE_LIMIT: must be positive'],
    ['SECOND_FACTOR_LOCK_AFTER', '1001', 'SECOND_FACTOR_LOCK_AFTER: must be at most 1000'],
    ['SIGNUP_LIMIT', '-1', 'SIGNUP_LIMIT: must be positive'],
    ['TOKEN_AUTH_FAILURE_LIMIT', '0', 'TOKEN_AUTH_FAILURE_LIMIT: must be positive'],
    ['SERVICE_NAME', ' ', 'SERVICE_NAME: must not be empty'],
    ['SERVICE_NAME', 'Bad\u0007Name', 'SERVICE_NAME: must not contain control characters'],
    ['BRAND_ACCENT_COLOR', 'blue', 'BRAND_ACCENT_COLOR: must be a colour written #rrggbb'],
    ['BRAND_ACCENT_COLOR', '#09d', 'BRAND_ACCENT_COLOR: must be a colour written #rrggbb'],
    ['BRAND_ACCENT_COLOR', '#ffd33d', 'BRAND_ACCENT_COLOR: #ffd33d against white has a contrast of 1.4'],
    ['BRAND_ACCENT_COLOR', '#2188ff', 'below the 4.5:1 that WCAG 2.2 AA asks for text'],
    ['BRAND_LOGO_FILE', '/nonexistent/logo.png', 'BRAND_LOGO_FILE: cannot read /nonexistent/logo.png'],
    ['SMTP_URL', 'mail.example.com:25', 'SMTP_URL: must be an smtp:// or smtps:// URL'],
    ['SMTP_URL', 'http://mail.example.com', 'SMTP_URL: must be an smtp:// or smtps:// URL'],
    ['MAIL_FROM', 'nobody', 'MAIL_FROM: must be an address'],
    ['VERIFICATION_EMAIL_LIMIT', '0', 'VERIFICATION_EMAIL_LIMIT: must be positive'],
    ['PASSWORD_RESET_LIMIT', 'x', 'PASSWORD_RESET_LIMIT: must be a number'],
    ['PASSWORD_RESET_ADDRESS_LIMIT', '-2', 'PASSWORD_RESET_ADDRESS_LIMIT: must be positive'],
    // 0 would mean "no timeout" to Node: the point of these settings is that none is unbounded.
    ['HTTP_REQUEST_TIMEOUT_MS', '0', 'HTTP_REQUEST_TIMEOUT_MS: must be positive'],
    ['HTTP_REQUEST_TIMEOUT_MS', '3600001', 'HTTP_REQUEST_TIMEOUT_MS: must be at most 3600000'],
    ['HTTP_CONNECTION_TIMEOUT_MS', '0', 'HTTP_CONNECTION_TIMEOUT_MS: must be positive'],
    ['HTTP_CONNECTION_TIMEOUT_MS', '1m', 'HTTP_CONNECTION_TIMEOUT_MS: must be a number'],
    ['HTTP_KEEP_ALIVE_TIMEOUT_MS', '-1', 'HTTP_KEEP_ALIVE_TIMEOUT_MS: must be positive'],
    ['HTTP_KEEP_ALIVE_TIMEOUT_MS', '2.5', 'HTTP_KEEP_ALIVE_TIMEOUT_MS: must be a whole number'],
    ['HEAP_GROWING_PERCENT', '-5', 'HEAP_GROWING_PERCENT: must not be negative'],
    ['HEAP_GROWING_PERCENT', '301', 'HEAP_GROWING_PERCENT: must be at most 300'],
    ['SESSION_CACHE_MAX_ENTRIES', '-1', 'SESSION_CACHE_MAX_ENTRIES: must not be negative'],
    ['SESSION_CACHE_MAX_ENTRIES', '100001', 'SESSION_CACHE_MAX_ENTRIES: must be at most 100000'],
    ['MAX_APPLICATIONS_PER_USER', '0', 'MAX_APPLICATIONS_PER_USER: must be positive'],
    ['MAX_TOKENS_PER_GRANT', 'all', 'MAX_TOKENS_PER_GRANT: must be a number'],
    ['CODE_ISSUE_LIMIT', '1.5', 'CODE_ISSUE_LIMIT: must be a whole number'],
    ['AUDIT_RETENTION_DAYS', '0', 'AUDIT_RETENTION_DAYS: must be positive'],
    ['AUDIT_RETENTION_DAYS', '3651', 'AUDIT_RETENTION_DAYS: must be at most 3650'],
    ['AUDIT_RETENTION_DAYS', 'forever', 'AUDIT_RETENTION_DAYS: must be a number'],
    ['RESOURCE_TOKEN_TTL_SECONDS_DEFAULT', '59', 'RESOURCE_TOKEN_TTL_SECONDS_DEFAULT: must be at least 60'],
    ['RESOURCE_TOKEN_TTL_SECONDS_DEFAULT', '604801', 'RESOURCE_TOKEN_TTL_SECONDS_DEFAULT: must be at most 604800'],
  ])('refuses %s=%s', (name, value, message) => {
    const text = configRefusal({ [name]: value })
    expect(text).toContain(message)
    expect(text.split('\n').filter((l) => l.startsWith('  '))).toHaveLength(1)
  })

  it('names every bad variable in one message', () => {
    const text = configRefusal({ PORT: 'x', LOG_LEVEL: 'loud', DATABASE_URL: 'nope' })
    expect(text).toMatch(/^Invalid configuration:/)
    expect(text).toContain('PORT: must be a number')
    expect(text).toContain('LOG_LEVEL: must be one of')
    expect(text).toContain('DATABASE_URL: must be a postgres://')
  })

  it('never repeats a secret value from the environment in its message', () => {
    const text = configRefusal({ DATABASE_URL: 'mysql://admin:hunter2@db/x' })
    expect(text).not.toContain('hunter2')
    expect(configRefusal({ SMTP_URL: 'imap://mailer:hunter3@mail.example.com' })).not.toContain('hunter3')
  })

  it('reads only the object it is given', () => {
    const saved = process.env.PORT
    process.env.PORT = 'not a port'
    try {
      expect(loadConfig({}).port).toBe(3000)
    } finally {
      if (saved === undefined) delete process.env.PORT
      else process.env.PORT = saved
    }
  })

  it('has a row in the configuration reference (docs/operating/configuration.md) for every variable, and no row for anything else', () => {
    const section = readFileSync(join(import.meta.dirname, '../../docs/operating/configuration.md'), 'utf8')
    const rows = [...section.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1])
    // DB_POOL_MAX and LOGIN_RATE_LIMIT are former names, named in the rows of their successors.
    const former = ['DB_POOL_MAX', 'LOGIN_RATE_LIMIT']
    expect(rows.sort()).toEqual(SETTING_NAMES.filter((n) => !former.includes(n)).sort())
    for (const name of former) expect(section).toContain(`\`${name}\``)
  })
})
