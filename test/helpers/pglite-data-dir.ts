import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createDatabase } from '../../src/db/connect.js'
import { migrateToLatest } from '../../src/db/migrate.js'

/*
 * DATA_DIRs for the tests that start Gatehouse processes on embedded PGlite. A new data
 * directory costs initdb, about 5 s of CPU on a quiet two-core machine (docs/development.md), and most of
 * these tests are about something else: the server's shutdown, the CLI's lock, outbox mail. So each gets a copy
 * of a data directory Gatehouse itself made (src/db/connect.ts), in the state it needs:
 *  - 'initialized': initdb has run, no migration has (for `gatehouse migrate`);
 *  - 'migrated': as a first start leaves it, without the secret key or any row.
 * Both are built by the first run that needs them and kept under node_modules/.cache, named by a
 * digest of what made them, as test/helpers/db-template.ts keeps the in-memory template. Unlike
 * that template they keep PostgreSQL's own settings (shared_buffers), since Gatehouse runs on
 * them. One test still starts from an empty DATA_DIR: the first start in
 * test/integration/server-process.test.ts.
 */

export type DataDirState = 'initialized' | 'migrated'

const root = join(import.meta.dirname, '../..')
const cacheDir = join(root, 'node_modules/.cache/gatehouse-test')

function digest(state: DataDirState): string {
  const hash = createHash('sha256')
  hash.update(state)
  hash.update(readFileSync(join(root, 'node_modules/@electric-sql/pglite/package.json')))
  hash.update(readFileSync(join(root, 'src/db/connect.ts')))
  hash.update(readFileSync(join(import.meta.dirname, 'pglite-data-dir.ts')))
  if (state === 'migrated') {
    for (const file of readdirSync(join(root, 'migrations')).sort()) {
      hash.update(`\0${file}\0`).update(readFileSync(join(root, 'migrations', file)))
    }
    hash.update(readFileSync(join(root, 'src/db/migrate.ts')))
  }
  return hash.digest('hex').slice(0, 16)
}

/** The cached data directory in `state`, built when absent. Never opened after it is in place. */
async function cachedDataDir(state: DataDirState): Promise<string> {
  const dir = join(cacheDir, `pglite-dir-${state}-${digest(state)}`)
  if (existsSync(dir)) return dir
  mkdirSync(cacheDir, { recursive: true })
  // Built aside and renamed: a file starting meanwhile sees the whole directory or none.
  const partial = mkdtempSync(join(cacheDir, `pglite-dir-${state}.partial-`))
  try {
    if (state === 'migrated') cpSync(await cachedDataDir('initialized'), partial, { recursive: true })
    const handle = await createDatabase({ dataDir: partial })
    try {
      if (state === 'migrated') await migrateToLatest(handle.db)
    } finally {
      await handle.close()
    }
    try {
      renameSync(partial, dir)
    } catch (err) {
      // Another test file built it first: theirs is as good.
      if (!existsSync(dir)) throw err
    }
  } finally {
    rmSync(partial, { recursive: true, force: true })
  }
  return dir
}

/** A new DATA_DIR under the system's temporary directory holding a PGlite database in `state`; the caller removes it. */
export async function pgliteDataDir(state: DataDirState, prefix: string): Promise<string> {
  const source = await cachedDataDir(state)
  const dir = mkdtempSync(join(tmpdir(), prefix))
  cpSync(source, dir, { recursive: true })
  return dir
}
