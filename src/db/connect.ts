import { mkdirSync } from 'node:fs'
import { type ListenEvents, type NotificationHandler, listenerSet, resilientPool } from '@gatehouse/verifier/shared'
import { CompiledQuery, Kysely, PostgresDialect } from 'kysely'
import { DatabaseAvailability } from './availability.js'
import { lockDataDir } from './data-dir-lock.js'
import type { Database } from './schema.js'
import { preparedStatementPool } from './prepared-pool.js'

export type Db = Kysely<Database>
export type { ListenEvents, NotificationHandler }

export interface DatabaseHandle {
  readonly db: Db
  readonly kind: 'postgres' | 'pglite'
  /** Whether the database answers, as the connections see it (always up for PGlite). */
  readonly availability: DatabaseAvailability
  /**
   * A statement written out in SQL, run through `db` (so as a prepared statement, and seen by
   * Kysely plugins). For the queries shared with @gatehouse/verifier.
   */
  query(text: string, values: readonly unknown[]): Promise<{ rows: readonly unknown[] }>
  /** Subscribes to a Postgres NOTIFY channel; resolves once listening. Returns the unsubscribe. */
  listen(channel: string, handler: NotificationHandler, events?: ListenEvents): Promise<() => Promise<void>>
  /**
   * Runs `work` over one connection whose session lasts the whole call, for what holds session
   * state across statements: the migrator's `pg_advisory_lock` and `SET statement_timeout`
   * (src/db/migrate.ts). PostgreSQL: a connection of its own to the LISTEN URL, the direct one
   * when DATABASE_URL is a transaction pooler, closed afterwards (docs/operating/pgbouncer.md).
   */
  session<T>(work: (db: Db) => Promise<T>): Promise<T>
  close(): Promise<void>
}

/** The PostgreSQL pool's settings (docs/operating/backups-and-upgrades.md "Failures and recovery"). */
export interface PoolSettings {
  max: number
  /** How long a query waits for a connection, opening one included, before it fails. */
  connectTimeoutMs: number
  /** An idle connection is closed after this long. */
  idleTimeoutMs: number
  /** PostgreSQL cancels a statement that runs longer (statement_timeout); 0 for no limit. */
  statementTimeoutMs: number
}

export const DEFAULT_POOL_SETTINGS: PoolSettings = Object.freeze({
  max: 10,
  connectTimeoutMs: 3_000,
  idleTimeoutMs: 30_000,
  statementTimeoutMs: 10_000,
})

export interface DatabaseOptions {
  /** postgres:// URL; absent means embedded PGlite. */
  url?: string | undefined
  /** PGlite data directory; `memory://` keeps it in memory (tests). */
  dataDir?: string
  /**
   * PGlite only: start from this data directory, as `dumpDataDir` wrote it, instead of running
   * initdb. The test suite clones one migrated database per file this way (test/helpers/db.ts).
   */
  initialData?: Blob
  pool?: Partial<PoolSettings>
  /**
   * PostgreSQL only: where the LISTEN connection goes, default `url`. Behind a transaction-pooling
   * PgBouncer `url` is the pooler, which cannot hold a session's LISTEN (docs/operating/pgbouncer.md).
   */
  listenUrl?: string | undefined
  /**
   * PostgreSQL only, default true: DML is sent as named prepared statements (prepared-pool.ts).
   * False sends every statement unnamed, which a transaction-pooling PgBouncer (1.18, Debian 12)
   * can carry, since a named statement lives on one server connection and the next transaction
   * may run on another.
   */
  preparedStatements?: boolean
}

export async function createDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  if (options.url) {
    return createPostgres(
      options.url,
      { ...DEFAULT_POOL_SETTINGS, ...options.pool },
      {
        listenUrl: options.listenUrl ?? options.url,
        preparedStatements: options.preparedStatements ?? true,
      },
    )
  }
  return createPglite(options.dataDir ?? './data', options.initialData)
}

/** `this.db`, not a captured one: a copy of the handle with another `db` (tests count queries) runs through it. */
function query(this: DatabaseHandle, text: string, values: readonly unknown[]): Promise<{ rows: readonly unknown[] }> {
  return this.db.executeQuery(CompiledQuery.raw(text, [...values]))
}

async function createPostgres(
  url: string,
  settings: PoolSettings,
  session: { listenUrl: string; preparedStatements: boolean },
): Promise<DatabaseHandle> {
  const availability = new DatabaseAvailability()
  // No client's error can end the process (resilientPool); a dead connection fails the query
  // that used it and the pool opens another for the next one.
  const pool = resilientPool({
    connectionString: url,
    max: settings.max,
    connectionTimeoutMillis: settings.connectTimeoutMs,
    idleTimeoutMillis: settings.idleTimeoutMs,
    ...(settings.statementTimeoutMs > 0 ? { statement_timeout: settings.statementTimeoutMs } : {}),
    keepAlive: true,
  })
  pool.on('connect', () => availability.reachable())
  // Kysely's own executor and PostgresDialect, over a pool whose clients send DML as named
  // prepared statements and tell `availability` what they see (src/db/prepared-pool.ts).
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: preparedStatementPool(pool, availability, session.preparedStatements) }),
  })
  // LISTEN is bound to its session: it goes to `listenUrl`, a direct connection when `url` is a
  // transaction pooler. NOTIFY is sent inside the revoking transaction, so it goes through `url`.
  const listeners = listenerSet(session.listenUrl)
  // The database answers again: the LISTEN connection need not wait out its backoff, so that
  // revocations flow again at once (docs/decisions/003-revocation-propagation.md).
  availability.onChange((change) => {
    if (change.up) listeners.reconnectNow()
  })
  return {
    db,
    kind: 'postgres',
    availability,
    query,
    listen: listeners.listen,
    session: (work) => onDirectConnection(session.listenUrl, settings, work),
    async close() {
      await listeners.closeAll()
      await db.destroy()
    },
  }
}

/*
 * Through a transaction-pooling PgBouncer, a session-level advisory lock and its unlock may run
 * on different server connections: the lock then stays on a pooled connection, and every other
 * process's migrator waits on it (Kysely's lock_timeout is an hour). Hence a connection of its
 * own, to PostgreSQL directly when DATABASE_LISTEN_URL says where that is.
 */
async function onDirectConnection<T>(url: string, settings: PoolSettings, work: (db: Db) => Promise<T>): Promise<T> {
  const pool = resilientPool({ connectionString: url, max: 1, connectionTimeoutMillis: settings.connectTimeoutMs, keepAlive: true })
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  try {
    return await work(db)
  } finally {
    await db.destroy()
  }
}

async function createPglite(dataDir: string, initialData: Blob | undefined): Promise<DatabaseHandle> {
  let unlock = () => {}
  if (!dataDir.startsWith('memory://')) {
    mkdirSync(dataDir, { recursive: true })
    unlock = lockDataDir(dataDir)
  }
  // Loaded only when used: a server on PostgreSQL never pays PGlite's memory.
  const [{ PGlite }, { PGliteDialect }] = await Promise.all([import('@electric-sql/pglite'), import('kysely-pglite-dialect')])
  let client
  try {
    client = new PGlite(dataDir, initialData ? { loadDataDir: initialData } : {})
    await client.waitReady
  } catch (err) {
    unlock()
    throw err
  }
  const db = new Kysely<Database>({ dialect: new PGliteDialect(client) })
  return {
    db,
    kind: 'pglite',
    // PGlite runs inside this process: there is no connection to lose.
    availability: new DatabaseAvailability(),
    query,
    async listen(channel, handler, events) {
      // PGlite lives in this process: the subscription cannot drop, so it is connected at once.
      const unsubscribe = await client.listen(channel, handler)
      events?.onConnected?.()
      return unsubscribe
    },
    // One connection in this process: its session lasts as long as the database.
    session: (work) => work(db),
    async close() {
      try {
        await db.destroy()
      } finally {
        unlock()
      }
    },
  }
}
