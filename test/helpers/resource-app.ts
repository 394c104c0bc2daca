import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import type { AppDeps } from '../../src/http/deps.js'
import { manualClock } from '../../src/lib/clock.js'
import { TEST_ISSUER, type TestContext } from './app.js'
import { createTestDatabase, type TestDatabase } from './db.js'
import { type QueryCounter, countQueries } from './query-counter.js'

export interface ResourceTestContext extends TestContext {
  /** Every query the app runs, counted. */
  queries: QueryCounter
  deps: AppDeps
}

/**
 * buildTestApp with counted queries. `shared` lets several apps use one database: two
 * Gatehouse instances on one Postgres, or on one PGlite.
 */
export async function buildResourceTestApp(
  env: Record<string, string> = {},
  shared?: TestDatabase,
): Promise<ResourceTestContext> {
  const testDb = shared ?? (await createTestDatabase())
  const config = loadConfig({ LOG_LEVEL: 'silent', PUBLIC_URL: TEST_ISSUER, ...env })
  const clock = manualClock(new Date())
  const { database, queries } = countQueries(testDb.handle)
  const deps: AppDeps = { config, database, clock }
  const app = await buildApp(deps)
  await app.ready()
  return {
    app,
    testDb,
    db: testDb.handle.db,
    clock,
    config,
    queries,
    deps,
    async close() {
      await app.close()
      if (!shared) await testDb.destroy()
    },
  }
}
