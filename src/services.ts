import { QUOTAS } from './limits/policy.js'
import { pino, type Logger } from 'pino'
import { AuditLog } from './audit/audit-log.js'
import type { AccountContext } from './accounts/context.js'
import type { Config } from './config.js'
import { describeFailure } from './db/availability.js'
import { type DatabaseHandle, createDatabase } from './db/connect.js'
import { migrateToLatest } from './db/migrate.js'
import { pinoOptions } from './lib/log-options.js'
import { type Clock, systemClock } from './lib/clock.js'
import { Janitor } from './limits/janitor.js'
import { type Mailer, createMailer } from './mail/mailer.js'
import { ApplicationCache } from './oauth/application-cache.js'
import { ClientAuthCache } from './oauth/client-auth-cache.js'
import { type ServerTokenCache, createServerTokenCache } from './oauth/token-validity.js'
import { RevocationBus } from './revocation/bus.js'
import { RevocationFeed } from './revocation/stream-feed.js'
import { TokenQuota } from './revocation/token-quota.js'

/*
 * What the edges (src/http/, src/cli/) translate into responses and output besides the services
 * themselves: the OAuth errors the protocol throws, and the database's outage answers. Part of the
 * services' face (docs/architecture.md "Layers and imports").
 */
export { RETRY_AFTER_SECONDS, connectionLost, databaseUnavailable } from './db/availability.js'
/** The stream writer's bound on a subscriber's unsent output (src/limits/policy.ts). */
export const STREAM_BUFFER_BYTES = QUOTAS.streamBufferBytes.max
export {
  InvalidRequestError,
  OAuthError,
  ResourceServerOnlyError,
  ServerError,
  SlowDownError,
  TemporarilyUnavailableError,
} from './oauth/errors.js'

/** Client authentications held by the resource-server endpoints' cache. */
const CLIENT_CACHE_MAX_ENTRIES = 10_000

/**
 * Everything Gatehouse runs on, built once (docs/architecture.md "Composition root"): route
 * plugins receive this and only register routes.
 */
export interface Services {
  readonly config: Config
  readonly clock: Clock
  readonly log: Logger
  readonly database: DatabaseHandle
  /** Every revocation reaches every receiver below through it. */
  readonly bus: RevocationBus
  /** What GET /oauth/revocations/stream tells its subscribers; the HTTP layer writes the events. */
  readonly revocationFeed: RevocationFeed
  /** Deletes expired rows every JANITOR_INTERVAL_SECONDS (README "Limits and quotas"). */
  readonly janitor: Janitor
  /** Keeps MAX_TOKENS_PER_GRANT after tokens are issued (README "Limits and quotas"). */
  readonly tokenQuota: TokenQuota
  /** Records security events (README "Audit log"); routes bind it to a request with `trail()`. */
  readonly audit: AuditLog
  /** SMTP, or the outbox directory (README "Mail"). */
  readonly mailer: Mailer
  /** What the account use cases need: the database, the bus, the mailer, links and limits. */
  readonly accounts: AccountContext
  readonly caches: {
    readonly tokens: ServerTokenCache
    readonly clients: ClientAuthCache
    readonly applications: ApplicationCache
  }
  close(): Promise<void>
}

export interface ServiceOverrides {
  /** An open database (tests share one between apps); closed by its owner, not here. */
  database?: DatabaseHandle
  clock?: Clock
  /** Where log lines go, default stdout. */
  logStream?: NodeJS.WritableStream
  /** Instead of the configured SMTP server or outbox (tests read the mails it keeps). */
  mailer?: Mailer
}

/** The configured database, migrated: migrations run at every start-up and are idempotent. */
async function openDatabase(config: Config): Promise<DatabaseHandle> {
  const database = await createDatabase({ url: config.databaseUrl, dataDir: config.dataDir, pool: config.dbPool })
  await migrateToLatest(database.db)
  return database
}

/** Opens (and migrates) the database, builds the caches, and starts listening for revocations. */
export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  const log = overrides.logStream ? pino(pinoOptions(config.logLevel), overrides.logStream) : pino(pinoOptions(config.logLevel))
  const clock = overrides.clock ?? systemClock
  const database = overrides.database ?? (await openDatabase(config))
  const { db } = database

  // Each outage is told twice, when it starts and when it ends, however many requests it refuses.
  const stopReporting = database.availability.onChange((change) => {
    if (change.up) log.info({ downMs: change.downMs, refused: change.refused }, 'database reachable again')
    else log.error({ cause: describeFailure(change.cause) }, 'database unreachable; requests that need it answer 503 until it is back')
  })

  const bus = new RevocationBus(database, log)
  const revocationFeed = new RevocationFeed(db, log, { limits: config.streams })
  const caches = {
    tokens: createServerTokenCache({ database, clock, ttlMs: config.tokenCacheTtlMs, maxEntries: config.tokenCacheMaxEntries }),
    clients: new ClientAuthCache({
      db,
      clock,
      ttlMs: config.tokenCacheTtlMs,
      maxEntries: CLIENT_CACHE_MAX_ENTRIES,
      failureLimit: config.tokenAuthFailureLimit,
    }),
    applications: new ApplicationCache(db, clock),
  }
  for (const receiver of [caches.tokens, caches.clients, caches.applications, revocationFeed]) bus.subscribe(receiver)
  await bus.start()
  const janitor = new Janitor({
    database,
    clock,
    log,
    intervalMs: config.janitor.intervalMs,
    revokedTokenRetentionMs: config.janitor.revokedTokenRetentionMs,
    auditRetentionMs: config.janitor.auditRetentionMs,
  })
  janitor.start()
  const tokenQuota = new TokenQuota({ db, bus, clock, tokensPerGrant: config.quotas.tokensPerGrant, log })
  const audit = new AuditLog({ db, clock, log })
  const mailer = overrides.mailer ?? createMailer(config.mail, log.child({ component: 'mail' }))
  const accounts: AccountContext = {
    db,
    bus,
    mailer,
    clock,
    publicUrl: config.publicUrl,
    serviceName: config.serviceName,
    limits: config.limits,
  }

  return {
    config,
    clock,
    log,
    database,
    bus,
    revocationFeed,
    janitor,
    tokenQuota,
    audit,
    mailer,
    accounts,
    caches,
    async close() {
      stopReporting()
      mailer.close()
      await janitor.stop()
      await tokenQuota.settled()
      revocationFeed.closeAll()
      await bus.stop()
      if (!overrides.database) await database.close()
    },
  }
}
