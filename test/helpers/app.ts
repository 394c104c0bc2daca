import type { FastifyInstance } from 'fastify'
import type { AddressInfo } from 'node:net'
import { buildApp } from '../../src/app.js'
import { loadConfig, type Config } from '../../src/config.js'
import { manualClock } from '../../src/lib/clock.js'
import { type AssembledServices, createServices } from '../../src/services.js'
import { createTestDatabase, type TestDatabase } from './db.js'
import { Mailbox, mailboxes } from './mailbox.js'
import { type QueryCounter, countQueries } from './query-counter.js'
import { TEST_SECRET_KEY } from './secret-key.js'

export const TEST_ISSUER = 'http://gatehouse.test'
export { TEST_SECRET_KEY } from './secret-key.js'

export interface TestContext {
  app: FastifyInstance
  testDb: TestDatabase
  db: TestDatabase['handle']['db']
  clock: ReturnType<typeof manualClock>
  config: Config
  deps: AssembledServices
  /** What revocations made by a test need to reach the app's caches, as the app's own do. */
  revocation: { db: TestDatabase['handle']['db']; bus: AssembledServices['bus'] }
  /** Every query and transaction the app runs, counted (the test's own `db` is not). */
  queries: QueryCounter
  /** Every mail the app sent (the app's mailer; mail-smtp.test.ts and mail-outbox.test.ts use real ones). */
  mailbox: Mailbox
  close(): Promise<void>
}

/**
 * A real app over a fresh real database, with a clock the test moves by hand. `shared` lets
 * several apps use one database: two Gatehouse instances on one Postgres, or on one PGlite.
 * `logStream` receives the app's log lines (at LOG_LEVEL, silent unless `env` says otherwise). Mail
 * goes to `mailbox`, unless `realMailer` asks for the configured SMTP server or outbox.
 * `beforeReady` sees the assembled app before it is ready, while hooks can still be added.
 */
export async function buildTestApp(
  env: Record<string, string> = {},
  shared?: TestDatabase,
  options: { logStream?: NodeJS.WritableStream; realMailer?: boolean; beforeReady?: (app: FastifyInstance) => void } = {},
): Promise<TestContext> {
  const testDb = shared ?? (await createTestDatabase())
  // Most files sign up many users from one test address; the sign-up limit has its own tests
  // (test/integration/account/rate-limit.test.ts), which set SIGNUP_LIMIT themselves. Most
  // operators of the tests log in with a password alone: the second-factor policy has its own tests
  // (test/integration/account/second-factor-policy.test.ts), which set REQUIRE_TWO_FACTOR themselves.
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    PUBLIC_URL: TEST_ISSUER,
    SIGNUP_LIMIT: '100000',
    REQUIRE_TWO_FACTOR: 'none',
    SECRET_KEY: TEST_SECRET_KEY,
    ...env,
  })
  const clock = manualClock(new Date())
  const { database, queries } = countQueries(testDb.handle)
  const mailbox = new Mailbox()
  const deps = await createServices(config, {
    database,
    clock,
    logStream: options.logStream,
    mailer: options.realMailer ? undefined : mailbox,
  })
  const app = await buildApp(deps)
  options.beforeReady?.(app)
  await app.ready()
  mailboxes.set(app, mailbox)
  return {
    app,
    testDb,
    db: testDb.handle.db,
    clock,
    config,
    deps,
    revocation: { db: testDb.handle.db, bus: deps.bus },
    queries,
    mailbox,
    async close() {
      await app.close()
      await deps.close()
      if (!shared) await testDb.destroy()
    },
  }
}

/**
 * Makes the app listen on a free loopback port, for what reaches it over real HTTP (a resource
 * server's verifier, the revocation stream, another process); returns its base URL. `close`
 * stops the listener with the app.
 */
export async function listenOnFreePort(t: Pick<TestContext, 'app'>): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`
}
