import { pino, type Logger } from 'pino'
import type { Config } from './config.js'
import { describeFailure } from './db/availability.js'
import { type DatabaseHandle, createDatabase } from './db/connect.js'
import { pinoOptions } from './lib/log-options.js'
import { type SecretKeySource, resolveSecretKey } from './lib/secret-key.js'
import type { Janitor } from './limits/janitor.js'
import type { MaintenanceUseCases } from './limits/maintenance.js'
import type { Mailer } from './mail/mailer.js'
import type { RevocationBus } from './revocation/bus.js'
import type { RevocationFeed } from './revocation/stream-feed.js'
import type { TokenQuota } from './revocation/token-quota.js'

/*
 * The process's side of the services (src/services.ts builds them): the database it opens, its
 * log, the sealing key, what a server starts after building them and the order of closing.
 */

/**
 * What the server ('server': listens, hears revocations, runs the janitor on its schedule) or the
 * command line ('cli': one command, no listener, no schedule, two connections) is built for.
 */
export type Role = 'server' | 'cli'

/** The configured database; one command needs two connections at most (the janitor's lock and its deletes). */
export function openDatabase(config: Config, role: Role): Promise<DatabaseHandle> {
  const pool = role === 'cli' ? { ...config.dbPool, max: 2 } : config.dbPool
  return createDatabase({
    url: config.databaseUrl,
    dataDir: config.dataDir,
    pool,
    listenUrl: config.databaseListenUrl,
    preparedStatements: config.databasePreparedStatements,
  })
}

/**
 * The command line's log: warnings only (an audit event not recorded), one line each on stderr,
 * as its other messages are (src/cli/run.ts).
 */
function commandLineLog(): Logger {
  return pino({ level: 'warn' }, { write: (line: string) => console.error(`gatehouse: ${(JSON.parse(line) as { msg: string }).msg}`) })
}

/** Closes the database a failed start-up opened, and rethrows. */
function closeOnFailure(database: DatabaseHandle) {
  return async (err: unknown): Promise<never> => {
    await database.close().catch(() => {})
    throw err
  }
}

export function loggerFor(config: Config, role: Role, stream: NodeJS.WritableStream | undefined): Logger {
  if (stream) return pino(pinoOptions(config.logLevel), stream)
  return role === 'cli' ? commandLineLog() : pino(pinoOptions(config.logLevel))
}

/**
 * Each outage is told twice, when it starts and when it ends, however many requests it refuses
 * (the command line does not: a command's failure is its one line instead). Returns the unsubscribe.
 */
export function reportOutages(database: DatabaseHandle, log: Logger): () => void {
  return database.availability.onChange((change) => {
    if (change.up) log.info({ downMs: change.downMs, refused: change.refused }, 'database reachable again')
    else log.error({ cause: describeFailure(change.cause) }, 'database unreachable; requests that need it answer 503 until it is back')
  })
}

/**
 * The key that seals TOTP secrets and the signing keys, resolved once, before the database opens.
 * PostgreSQL without SECRET_KEY throws SecretKeyError (src/lib/secret-key.ts): the server and the
 * command line refuse to start with its one line.
 */
export function sealingKey(config: Config): Promise<SecretKeySource> {
  return resolveSecretKey(config)
}

/** A server's start: migrations (at every start-up; they are idempotent), the revocation LISTEN, the janitor's schedule. */
export async function startServing(parts: {
  database: DatabaseHandle
  maintenance: MaintenanceUseCases
  bus: RevocationBus
  janitor: Janitor
  migrate: boolean
}): Promise<void> {
  if (parts.migrate) await parts.maintenance.migrate().catch(closeOnFailure(parts.database))
  await parts.bus.start()
  parts.janitor.start()
}

/** The services' close: in this order, so nothing stopped is still called; the database last, when this opened it. */
export function closing(parts: {
  stopReporting: () => void
  mailer: Mailer
  janitor: Janitor
  tokenQuota: TokenQuota
  revocationFeed: RevocationFeed
  bus: RevocationBus
  database: DatabaseHandle
  ownsDatabase: boolean
}): () => Promise<void> {
  return async () => {
    parts.stopReporting()
    parts.mailer.close()
    await parts.janitor.stop()
    await parts.tokenQuota.settled()
    parts.revocationFeed.closeAll()
    await parts.bus.stop()
    if (parts.ownsDatabase) await parts.database.close()
  }
}
