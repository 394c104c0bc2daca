import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync, rmSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { beforeAll, expect, it, vi } from 'vitest'
import { createDatabase } from '../../src/db/connect.js'
import { ensureBuilt } from '../helpers/build.js'
import { createTestDatabase } from '../helpers/db.js'
import { createUser } from '../helpers/factories.js'
import { runBuiltCli } from '../helpers/gatehouse-process.js'
import { pgliteDataDir } from '../helpers/pglite-data-dir.js'
import { TEST_SECRET_KEY } from '../helpers/secret-key.js'

// Real processes, each compiling or loading the whole server at start, on a two-core machine that
// runs another test file beside this one: generous limits, since a slow start is not a failure.
vi.setConfig({ testTimeout: 120_000 })

/*
 * `npm run janitor` as an operator runs it: a child process that prints what it removed. The
 * failure is shown by the built `gatehouse janitor`, the same command without npm and tsx.
 */

beforeAll(async () => {
  await ensureBuilt()
}, 180_000)

const ROOT = join(import.meta.dirname, '../..')

/*
 * `npm run janitor` is its script in package.json run by `sh -c` with node_modules/.bin on PATH;
 * the test runs that script the same way, without npm's own second of start-up (as
 * server-process.test.ts runs `npm run migrate`).
 */
const janitorScript = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.janitor!

function janitor(env: Record<string, string>) {
  const result = spawnSync('sh', ['-c', janitorScript], {
    cwd: ROOT,
    env: { PATH: [join(ROOT, 'node_modules/.bin'), process.env.PATH ?? ''].join(delimiter), ...env },
    encoding: 'utf8',
    timeout: 90_000,
  })
  return { status: result.status, stdout: result.stdout, stderr: result.stderr }
}

it('`npm run janitor` removes expired rows once, prints how many per table and exits 0', async () => {
  // docs/operating/limits.md "The janitor": `npm run janitor` runs it once, here on the sources through tsx.
  expect(janitorScript).toBe('tsx --conditions=source src/cli.ts janitor')
  const testDb = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL ? await createTestDatabase() : undefined
  // On PGlite, a copy of a migrated data directory (test/helpers/pglite-data-dir.ts): initdb is not under test here.
  const dataDir = testDb ? undefined : await pgliteDataDir('migrated', 'gatehouse-janitor-')
  try {
    const handle = testDb?.handle ?? (await createDatabase({ dataDir: dataDir! }))
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

    // With PostgreSQL, SECRET_KEY is required, as for every command that opens the database.
    const run = janitor(testDb ? { DATABASE_URL: testDb.url!, SECRET_KEY: TEST_SECRET_KEY } : { DATA_DIR: dataDir! })
    expect(run.stderr).toBe('')
    expect(run.status).toBe(0)
    expect(run.stdout).toContain('sessions: 3 removed\n')
    expect(run.stdout).toContain('authorization_codes: 0 removed\n')
  } finally {
    await testDb?.destroy()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  }
})

it('`gatehouse janitor` exits 1 with one line when the database cannot be reached', async () => {
  const run = await runBuiltCli(
    { DATABASE_URL: 'postgres://gatehouse@127.0.0.1:9/gatehouse', DATABASE_CONNECT_TIMEOUT_MS: '1000' },
    'janitor',
  )
  expect(run.code).toBe(1)
  // One line: the message and its newline, nothing after.
  expect(run.stderr).toMatch(/^Janitor failed: [^\n]+\n$/)
})
