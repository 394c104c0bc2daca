import type { MigrationResult } from 'kysely'
import type { DatabaseHandle } from '../db/connect.js'
import { migrateToLatest } from '../db/migrate.js'
import type { Janitor, JanitorRun } from './janitor.js'

/*
 * What keeps the database in shape, for `gatehouse migrate` and `gatehouse janitor` (docs/operating/command-line.md)
 * and for start-up: the one migrate path and the one janitor run, built
 * once in src/services.ts.
 */
export interface MaintenanceUseCases {
  /** Applies pending migrations (idempotent); the migrations it applied, none when up to date. */
  migrate(): Promise<readonly MigrationResult[]>
  /** One janitor run now; `ran` is false when another process holds the janitor's lock. */
  janitor(): Promise<JanitorRun>
}

export function maintenanceUseCases(database: Pick<DatabaseHandle, 'session'>, janitor: Janitor): MaintenanceUseCases {
  return {
    migrate: async () => (await database.session(migrateToLatest)).results ?? [],
    janitor: () => janitor.runOnce(),
  }
}
