import { defineConfig } from 'vitest/config'

// test/postgres/ holds what only a PostgreSQL server can show: several OS processes sharing
// one database, and a LISTEN connection that can be cut. They run whenever the suite runs
// against a server (TEST_DATABASE_URL or DATABASE_URL), which .ci/run always does; PGlite
// lives inside one process, so the PGlite pass has no such tests to run.
const server = Boolean(process.env.TEST_DATABASE_URL || process.env.DATABASE_URL)

export default defineConfig({
  // Workspace packages resolve to their TypeScript sources (the "source" export condition), so
  // tests never run against a stale build.
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
  test: {
    include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    exclude: server ? ['**/node_modules/**'] : ['**/node_modules/**', 'test/postgres/**'],
    // Each test file gets its own database (test/helpers/db.ts), so files run in parallel.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})
