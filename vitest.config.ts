import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

// test/postgres/ holds what only a PostgreSQL server can show: several OS processes sharing
// one database, and a LISTEN connection that can be cut. They run whenever the suite runs
// against a server (TEST_DATABASE_URL or DATABASE_URL), which .ci/run always does; PGlite
// lives inside one process, so the PGlite pass has no such tests to run.
const server = Boolean(process.env.TEST_DATABASE_URL || process.env.DATABASE_URL)
// Migrates one template database per project and run, which each test file clones (test/helpers/db.ts).
const databaseTemplate = 'test/global-setup.ts'

export default defineConfig({
  // Workspace packages resolve to their TypeScript sources (the "source" export condition), so
  // tests never run against a stale build.
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
  test: {
    // Two dependencies of the MCP SDK's client (test/browser/mcp-client.test.ts) publish a "source"
    // condition too, naming TypeScript files that Node cannot import; vitest runs its workers with
    // --conditions=source, so Node would pick them for the SDK if it imported it itself. Vitest
    // compiles the SDK and both instead.
    server: { deps: { inline: ['@modelcontextprotocol/sdk', 'eventsource', 'eventsource-parser'] } },
    // Each test file gets its own database (test/helpers/db.ts), so files run in parallel.
    pool: 'forks',
    // One file more than there are cores, not vitest's default of one less: a file spends much of
    // its time waiting on the database, Chromium or a child process, so the cores stay busy only
    // with a file to spare (docs/development.md gives the measured runs).
    maxWorkers: availableParallelism() + 1,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits for an event (a notice heard, a stream closed), so its bound is a safety
    // net, not the assertion: vitest's default of one second is a wall-clock deadline a busy
    // machine can miss. 20 s as NOTICE_WAIT_MS (test/helpers/propagation.ts), below testTimeout,
    // so an event that never comes fails with the poll's message.
    expect: { poll: { timeout: 20_000 } },
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts', 'packages/*/src/**/*.ts'],
      reporter: ['text-summary', 'text', 'html'],
      reportsDirectory: 'coverage',
    },
    // `npm run test:unit`, `test:integration`, `test:browser`, `test:faults` run one project each; `npm test` all.
    projects: [
      {
        extends: true,
        // Pure modules, no database and no global state: one process for all of them rather than
        // a fresh one per file, which cost more than their tests.
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'bench/**/*.test.ts'],
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          // One process per worker runs file after file, importing the service graph (and compiling
          // PGlite's WebAssembly) once instead of once per file. Files still share no state: each
          // builds its own database, services and app (test/helpers/app.ts).
          isolate: false,
          include: ['test/integration/**/*.test.ts', ...(server ? ['test/postgres/**/*.test.ts'] : [])],
          globalSetup: [databaseTemplate],
        },
      },
      {
        extends: true,
        // As the integration project: each file still has its own database, app and Chromium. A
        // browser walk with an axe pass per page takes about 25 s beside another file on two cores
        // (test/browser/admin.test.ts, passkeys.test.ts), so the bound is three times that.
        test: {
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          globalSetup: [databaseTemplate],
          isolate: false,
          testTimeout: 90_000,
        },
      },
      // docs/operating/backups-and-upgrades.md "Failures and recovery": the built server (`node dist/src/server.js`, rebuilt first when stale) as
      // child processes whose database fails under them. The PostgreSQL faults need a server;
      // kill -9 on PGlite runs in both passes.
      {
        extends: true,
        test: {
          name: 'faults',
          include: ['test/faults/pglite-crash.test.ts', ...(server ? ['test/faults/postgres-faults.test.ts'] : [])],
          globalSetup: [databaseTemplate, 'test/faults/global-setup.ts'],
        },
      },
    ],
  },
})
