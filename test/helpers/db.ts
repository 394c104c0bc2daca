import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { createDatabase, type DatabaseHandle } from '../../src/db/connect.js'
import { migrateToLatest } from '../../src/db/migrate.js'

/** The Postgres server the suite runs against, or undefined for embedded PGlite. */
export const serverUrl: string | undefined = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL || undefined

export interface TestDatabase {
  handle: DatabaseHandle
  /** postgres:// URL of this file's own database (server mode only). */
  url: string | undefined
  destroy(): Promise<void>
}

/**
 * A fresh, migrated database for one test file: an in-memory PGlite, or a new database on the
 * server named after this worker. Files never share rows, so they can run in parallel.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  if (!serverUrl) {
    const handle = await createDatabase({ dataDir: 'memory://' })
    await migrateToLatest(handle.db)
    return { handle, url: undefined, destroy: () => handle.close() }
  }
  const name = `gatehouse_test_${process.pid}_${randomBytes(4).toString('hex')}`
  await adminQuery(`create database ${pg.escapeIdentifier(name)}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  const handle = await createDatabase({ url: url.toString(), pool: { max: 5 } })
  await migrateToLatest(handle.db)
  return {
    handle,
    url: url.toString(),
    async destroy() {
      await handle.close()
      await adminQuery(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`)
    },
  }
}

async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl })
  await client.connect()
  try {
    await client.query(text)
  } finally {
    await client.end()
  }
}
