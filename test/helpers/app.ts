import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { loadConfig, type Config } from '../../src/config.js'
import { manualClock } from '../../src/lib/clock.js'
import { createTestDatabase, type TestDatabase } from './db.js'

export const TEST_ISSUER = 'http://gatehouse.test'

export interface TestContext {
  app: FastifyInstance
  testDb: TestDatabase
  db: TestDatabase['handle']['db']
  clock: ReturnType<typeof manualClock>
  config: Config
  close(): Promise<void>
}

/** A real app over a fresh real database, with a clock the test moves by hand. */
export async function buildTestApp(env: Record<string, string> = {}): Promise<TestContext> {
  const testDb = await createTestDatabase()
  const config = loadConfig({ LOG_LEVEL: 'silent', PUBLIC_URL: TEST_ISSUER, ...env })
  const clock = manualClock(new Date())
  const app = await buildApp({ config, database: testDb.handle, clock })
  await app.ready()
  return {
    app,
    testDb,
    db: testDb.handle.db,
    clock,
    config,
    async close() {
      await app.close()
      await testDb.destroy()
    },
  }
}
