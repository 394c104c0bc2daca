import { mkdirSync } from 'node:fs'
import { type ListenEvents, type NotificationHandler, listenerSet } from '@gatehouse/verifier/shared'
import { CompiledQuery, Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import type { Database } from './schema.js'
import { preparedStatementPool } from './prepared-pool.js'

export type Db = Kysely<Database>
export type { ListenEvents, NotificationHandler }

export interface DatabaseHandle {
  readonly db: Db
  readonly kind: 'postgres' | 'pglite'
  /**
   * A statement written out in SQL, run through `db` (so as a prepared statement, and seen by
   * Kysely plugins). For the queries shared with @gatehouse/verifier.
   */
  query(text: string, values: readonly unknown[]): Promise<{ rows: readonly unknown[] }>
  /** Subscribes to a Postgres NOTIFY channel; resolves once listening. Returns the unsubscribe. */
  listen(channel: string, handler: NotificationHandler, events?: ListenEvents): Promise<() => Promise<void>>
  close(): Promise<void>
}

export interface DatabaseOptions {
  /** postgres:// URL; absent means embedded PGlite. */
  url?: string | undefined
  /** PGlite data directory; `memory://` keeps it in memory (tests). */
  dataDir?: string
  poolMax?: number
}

export async function createDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  if (options.url) return createPostgres(options.url, options.poolMax ?? 10)
  return createPglite(options.dataDir ?? './data')
}

/** `this.db`, not a captured one: a copy of the handle with another `db` (tests count queries) runs through it. */
function query(this: DatabaseHandle, text: string, values: readonly unknown[]): Promise<{ rows: readonly unknown[] }> {
  return this.db.executeQuery(CompiledQuery.raw(text, [...values]))
}

function createPostgres(url: string, poolMax: number): DatabaseHandle {
  const pool = new pg.Pool({ connectionString: url, max: poolMax })
  // An idle client's error (server restart, terminated backend) must not crash the process;
  // the pool discards that client and the next query opens a new one.
  pool.on('error', () => {})
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparedStatementPool(pool) }) })
  const listeners = listenerSet(url)
  return {
    db,
    kind: 'postgres',
    query,
    listen: listeners.listen,
    async close() {
      await listeners.closeAll()
      await db.destroy()
    },
  }
}

async function createPglite(dataDir: string): Promise<DatabaseHandle> {
  if (!dataDir.startsWith('memory://')) mkdirSync(dataDir, { recursive: true })
  // Loaded only when used: a server on PostgreSQL never pays PGlite's memory.
  const [{ PGlite }, { PGliteDialect }] = await Promise.all([import('@electric-sql/pglite'), import('kysely-pglite-dialect')])
  const client = new PGlite(dataDir)
  await client.waitReady
  const db = new Kysely<Database>({ dialect: new PGliteDialect(client) })
  return {
    db,
    kind: 'pglite',
    query,
    async listen(channel, handler, events) {
      // PGlite lives in this process: the subscription cannot drop, so it is connected at once.
      const unsubscribe = await client.listen(channel, handler)
      events?.onConnected?.()
      return unsubscribe
    },
    async close() {
      await db.destroy()
    },
  }
}
