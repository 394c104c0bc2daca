import { Migrator, type MigrationResultSet, sql } from 'kysely'
import { migrations } from '../../migrations/index.js'
import type { Db } from './connect.js'

/**
 * Applies every pending migration; throws with the failing migration's name. The migrations run
 * on one connection without DATABASE_STATEMENT_TIMEOUT_MS, which bounds requests: building an
 * index on a large table may rightly take longer. The migrator's advisory lock and that SET are
 * session state, so the server migrates through DatabaseHandle.session (src/limits/maintenance.ts).
 */
export async function migrateToLatest(db: Db): Promise<MigrationResultSet> {
  const result = await db.connection().execute(async (connection) => {
    await sql`set statement_timeout = 0`.execute(connection)
    try {
      return await new Migrator({ db: connection, provider: { getMigrations: async () => migrations } }).migrateToLatest()
    } finally {
      await sql`reset statement_timeout`.execute(connection)
    }
  })
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown'
    throw new Error(`Migration ${failed} failed: ${String(result.error)}`, { cause: result.error })
  }
  return result
}
