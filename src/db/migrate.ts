import { Migrator, type MigrationResultSet } from 'kysely'
import { migrations } from '../../migrations/index.js'
import type { Db } from './connect.js'

/** Applies every pending migration; throws with the failing migration's name. */
export async function migrateToLatest(db: Db): Promise<MigrationResultSet> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } })
  const result = await migrator.migrateToLatest()
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown'
    throw new Error(`Migration ${failed} failed: ${String(result.error)}`, { cause: result.error })
  }
  return result
}
