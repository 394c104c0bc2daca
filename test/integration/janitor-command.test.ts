import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it, vi } from 'vitest'
import { createDatabase } from '../../src/db/connect.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { createTestDatabase } from '../helpers/db.js'
import { createUser } from '../helpers/factories.js'

// Real processes, each compiling or loading the whole server at start, on a two-core machine that
// runs another test file beside this one: generous limits, since a slow start is not a failure.
vi.setConfig({ testTimeout: 120_000 })

/* `npm run janitor` as an operator runs it: a child process that prints what it removed. */

function janitor(env: Record<string, string>) {
  const result = spawnSync('npm', ['run', '--silent', 'janitor'], {
    cwd: join(import.meta.dirname, '../..'),
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    encoding: 'utf8',
    timeout: 90_000,
  })
  // npm's own configuration warnings are not the janitor's output.
  const stderr = result.stderr
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('npm '))
    .join('\n')
  return { status: result.status, stdout: result.stdout, stderr }
}

it('`npm run janitor` removes expired rows once, prints how many per table and exits 0', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-janitor-'))
  const testDb = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL ? await createTestDatabase() : undefined
  try {
    const handle = testDb?.handle ?? (await createDatabase({ dataDir }))
    await migrateToLatest(handle.db)
    const user = await createUser(handle.db)
    const old = new Date(Date.now() - 86_400_000)
    await handle.db
      .insertInto('sessions')
      .values(
        Array.from({ length: 3 }, () => ({ id_hash: randomBytes(32).toString('hex'), user_id: user.id, created_at: old, expires_at: old })),
      )
      .execute()
    // PGlite's data directory belongs to one process at a time.
    if (!testDb) await handle.close()

    const run = janitor(testDb ? { DATABASE_URL: testDb.url! } : { DATA_DIR: dataDir })
    expect(run.stderr).toBe('')
    expect(run.status).toBe(0)
    expect(run.stdout).toContain('sessions: 3 removed\n')
    expect(run.stdout).toContain('authorization_codes: 0 removed\n')
  } finally {
    await testDb?.destroy()
    rmSync(dataDir, { recursive: true, force: true })
  }
})

it('`npm run janitor` exits 1 with one line when the database cannot be reached', () => {
  const run = janitor({ DATABASE_URL: 'postgres://gatehouse@127.0.0.1:9/gatehouse', DATABASE_CONNECT_TIMEOUT_MS: '1000' })
  expect(run.status).toBe(1)
  expect(run.stderr.split('\n')).toHaveLength(1)
  expect(run.stderr).toMatch(/^Janitor failed: /)
})
