import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import pg from 'pg'
import { createDatabase, type DatabaseHandle, type DatabaseOptions } from '../../src/db/connect.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { type DatabaseTemplate, adminQuery, dropDatabase } from './db-template.js'

/** The Postgres server the suite runs against, or undefined for embedded PGlite. */
export const serverUrl: string | undefined = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL || undefined

export interface TestDatabase {
  handle: DatabaseHandle
  /** postgres:// URL of this file's own database (server mode only). */
  url: string | undefined
  destroy(): Promise<void>
}

/**
 * A fresh, migrated database for one test file: an in-memory PGlite, or a new database on the
 * server named after this worker. Files never share rows, so they can run in parallel.
 *
 * Migrating costs seconds and a file's tests often less, so the migrations run once per run
 * and project, not once per file: test/global-setup.ts builds a migrated template
 * (test/helpers/db-template.ts) and each file clones it.
 *  - PostgreSQL: CREATE DATABASE … TEMPLATE copies the run's template database, which the
 *    global teardown drops.
 *  - PGlite: the template is the migrated data directory as `dumpDataDir` wrote it, which the
 *    in-memory PGlite loads instead of running initdb (the larger part of starting one); and a
 *    worker's next file gets an earlier file's PGlite back, emptied (giveBack).
 * Outside vitest (bench/propagation.ts) there is no template and the new database is migrated
 * in place. The migrations still run from an empty database in test/integration/storage.test.ts.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const template = await providedTemplate()
  if (!serverUrl) {
    if (template?.kind === 'pglite') {
      let handle = emptied.pop()
      if (handle === undefined) {
        handle = await createDatabase({ dataDir: 'memory://', initialData: new TemplateBytes(await readFile(template.dumpFile)) })
        templateShape ??= await shapeOf(handle)
      }
      const given = handle
      return { handle: given, url: undefined, destroy: () => giveBack(given) }
    }
    const handle = await createDatabase({ dataDir: 'memory://' })
    await migrateToLatest(handle.db)
    return { handle, url: undefined, destroy: () => handle.close() }
  }
  const clone = template?.kind === 'postgres' ? template.name : undefined
  const made = await newServerDatabase(serverUrl, clone, { pool: { max: 5 } })
  if (clone === undefined) await migrateToLatest(made.handle.db)
  return made
}

/** A database of its own on the server, empty or a copy of `template`, dropped by destroy(). */
async function newServerDatabase(
  server: string,
  template: string | undefined,
  options: Omit<DatabaseOptions, 'url'>,
): Promise<TestDatabase> {
  const name = `gatehouse_test_${process.pid}_${randomBytes(4).toString('hex')}`
  const clone = template === undefined ? '' : ` template ${pg.escapeIdentifier(template)}`
  await adminQuery(server, `create database ${pg.escapeIdentifier(name)}${clone}`)
  const url = new URL(server)
  url.pathname = `/${name}`
  const handle = await createDatabase({ ...options, url: url.toString() })
  return {
    handle,
    url: url.toString(),
    async destroy() {
      await handle.close()
      await dropDatabase(server, name)
    },
  }
}

/**
 * A database no migration has run on, for the tests of the migrations themselves
 * (test/integration/migrations.test.ts): an in-memory PGlite, or a new, empty database on the server.
 */
export async function createUnmigratedDatabase(): Promise<TestDatabase> {
  if (!serverUrl) {
    const handle = await createDatabase({ dataDir: 'memory://' })
    return { handle, url: undefined, destroy: () => handle.close() }
  }
  // Unprepared: a statement prepared before a migration fails after it if its rows changed shape
  // ("cached plan must not change result type").
  return newServerDatabase(serverUrl, undefined, { pool: { max: 2 }, preparedStatements: false })
}

/**
 * PGlite databases of this worker's earlier test files, emptied and waiting for the next one.
 * Loading the template into a new PGlite costs a second or more of CPU per file on these
 * machines; emptying one costs a few milliseconds. A worker runs its files one after another
 * (vitest.config.ts: `isolate: false`), so a database is never shared by two files at once.
 */
const emptied: DatabaseHandle[] = []

/**
 * The shape of the schema: tables, columns with their types and defaults, constraints and
 * indexes. A file that altered it (test/integration/quotas.test.ts adds a constraint and drops
 * it again) and failed before undoing that gives its database to no other file.
 */
const SHAPE = `select md5(string_agg(x, ';' order by x)) as shape from (
  select c.relname || ':' || c.relkind::text as x from pg_class c where c.relnamespace = 'public'::regnamespace
  union all
  select a.attrelid::regclass::text || '.' || a.attname || ':' || format_type(a.atttypid, a.atttypmod) || ':' || a.attnotnull::text || ':' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    from pg_attribute a join pg_class c on c.oid = a.attrelid
    left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
    where c.relnamespace = 'public'::regnamespace and a.attnum > 0 and not a.attisdropped
  union all
  select conrelid::regclass::text || ':' || conname || ':' || pg_get_constraintdef(oid) from pg_constraint where connamespace = 'public'::regnamespace
  union all
  select pg_get_indexdef(indexrelid) from pg_index i join pg_class c on c.oid = i.indexrelid where c.relnamespace = 'public'::regnamespace
) s`

/** The template's shape, read from this worker's first fresh clone. */
let templateShape: string | undefined

async function shapeOf(handle: DatabaseHandle): Promise<string> {
  return ((await handle.query(SHAPE, [])).rows[0] as { shape: string }).shape
}

/**
 * A file's PGlite database back to the state of the template: every table emptied (the
 * migrations insert no rows, so empty is as migrated) and the session's settings reset. One
 * whose schema no longer has the template's shape, that cannot be emptied, or that its test
 * closed, is closed and not used again.
 */
async function giveBack(handle: DatabaseHandle): Promise<void> {
  try {
    if (templateShape === undefined || (await shapeOf(handle)) !== templateShape) throw new Error('schema changed')
    const { rows } = await handle.query(
      "select string_agg(format('%I', tablename), ', ') as tables from pg_tables where schemaname = 'public' and tablename not like 'kysely\\_%'",
      [],
    )
    const tables = (rows[0] as { tables: string | null }).tables
    if (tables) await handle.query(`truncate ${tables} restart identity cascade`, [])
    await handle.query('reset all', [])
    emptied.push(handle)
  } catch {
    await handle.close().catch(() => {})
  }
}

/**
 * The template's bytes as PGlite's `loadDataDir` reads them: with `arrayBuffer()` alone. A Blob
 * made of them would copy the 40 MB once when built and Node 20 would stream them back in small
 * chunks: together over half a second of CPU per test file on these machines. This one hands the
 * file's own buffer over (each file reads its own) and refuses every other way of reading it.
 */
class TemplateBytes extends Blob {
  readonly #bytes: ArrayBuffer

  constructor(file: Buffer) {
    super([])
    const whole = file.byteOffset === 0 && file.byteLength === file.buffer.byteLength
    this.#bytes = whole ? (file.buffer as ArrayBuffer) : new Uint8Array(file).buffer
  }

  override get size(): number {
    return this.#bytes.byteLength
  }

  override arrayBuffer(): Promise<ArrayBuffer> {
    return Promise.resolve(this.#bytes)
  }

  override slice(): Blob {
    throw new Error('TemplateBytes is read with arrayBuffer() only')
  }

  override stream(): never {
    throw new Error('TemplateBytes is read with arrayBuffer() only')
  }

  override text(): never {
    throw new Error('TemplateBytes is read with arrayBuffer() only')
  }
}

async function providedTemplate(): Promise<DatabaseTemplate | undefined> {
  if (!process.env.VITEST) return undefined
  const { inject } = await import('vitest')
  return inject('databaseTemplate')
}
