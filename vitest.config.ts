import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Each test file gets its own database (test/helpers/db.ts), so files run in parallel.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})
