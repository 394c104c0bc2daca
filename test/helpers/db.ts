import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import pg from 'pg'
import { createDatabase, type DatabaseHandle } from '../../src/db/connect.js'
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
 * A fresh, migrated database for one test file: an in-memory PGlite, or a database of its own on
 * the server. Files never share rows, so they can run in parallel.
 *
 * Migrating costs seconds and a file's tests often less, so the migrations run once per run
 * and project, not once per file: test/global-setup.ts builds a migrated template
 * (test/helpers/db-template.ts) and each file clones it.
 *  - PostgreSQL: CREATE DATABASE … TEMPLATE copies the run's template database; the global
 *    teardown drops it and every database cloned from it.
 *  - PGlite: the template is the migrated data directory as `dumpDataDir` wrote it, which the
 *    in-memory PGlite loads instead of running initdb (the larger part of starting one).
 * Then a worker's next file gets an earlier file's database back, emptied (giveBack), instead of
 * a new clone. Outside vitest (bench/propagation.ts) there is no template and the new database
 * is migrated in place. The migrations still run from an empty database in
 * test/integration/storage.test.ts.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const template = await providedTemplate()
  if (template?.kind === 'pglite' && !serverUrl) {
    let handle = emptiedPglite.pop()
    if (handle === undefined) {
      handle = await createDatabase({ dataDir: 'memory://', initialData: new TemplateBytes(await readFile(template.dumpFile)) })
      templateShape ??= await shapeOf((text) => handle!.query(text, []))
    }
    return { handle, url: undefined, destroy: () => giveBackPglite(handle) }
  }
  if (template?.kind === 'postgres' && serverUrl) {
    const server = serverUrl
    let name = emptiedOnServer.pop()
    if (name === undefined) {
      name = `${template.name}_f_${randomBytes(4).toString('hex')}`
      await adminQuery(server, `create database ${pg.escapeIdentifier(name)} template ${pg.escapeIdentifier(template.name)}`)
    }
    const url = databaseUrl(server, name)
    const handle = await createDatabase({ url, pool: { max: 5 } })
    templateShape ??= await shapeOf((text) => handle.query(text, []))
    return { handle, url, destroy: () => giveBackOnServer(server, name!, handle) }
  }
  if (!serverUrl) {
    const handle = await createDatabase({ dataDir: 'memory://' })
    await migrateToLatest(handle.db)
    return { handle, url: undefined, destroy: () => handle.close() }
  }
  const server = serverUrl
  const name = `gatehouse_test_${process.pid}_${randomBytes(4).toString('hex')}`
  await adminQuery(server, `create database ${pg.escapeIdentifier(name)}`)
  const url = databaseUrl(server, name)
  const handle = await createDatabase({ url, pool: { max: 5 } })
  await migrateToLatest(handle.db)
  return {
    handle,
    url,
    async destroy() {
      await handle.close()
      await dropDatabase(server, name)
    },
  }
}

function databaseUrl(server: string, name: string): string {
  const url = new URL(server)
  url.pathname = `/${name}`
  return url.toString()
}

/*
 * Databases of this worker's earlier test files, emptied and waiting for the next one. Loading
 * the template into a new PGlite costs a second or more of CPU per file on these machines, and
 * creating and dropping a database on the server half a second or more; emptying one costs
 * milliseconds. A worker runs its files one after another (vitest.config.ts: `isolate: false`),
 * so a database is never shared by two files at once.
 */
const emptiedPglite: DatabaseHandle[] = []
const emptiedOnServer: string[] = []

/** Its tables but the migrator's. */
const TABLES = `from pg_tables where schemaname = 'public' and tablename not like 'kysely\\_%'`

/**
 * How each engine empties them fastest. PGlite: one TRUNCATE. PostgreSQL: TRUNCATE makes new
 * files for every table and index and took half a second here, while a test leaves a few rows,
 * so DELETE, with the foreign keys' triggers off (session_replication_role, a superuser's
 * setting; elsewhere this fails and the database is dropped instead), and the one identity
 * sequence (audit_events.id) restarted, as TRUNCATE … RESTART IDENTITY would.
 */
const EMPTYING = {
  pglite: `select 'truncate ' || string_agg(format('%I', tablename), ', ') || ' restart identity cascade' as statement ${TABLES}`,
  postgres: `select 'set session_replication_role = replica; '
      || string_agg(format('delete from %I', tablename), '; ') || '; '
      || coalesce((select string_agg(format('alter sequence %I restart', sequencename), '; ') from pg_sequences where schemaname = 'public') || '; ', '')
      || 'reset session_replication_role' as statement ${TABLES}`,
}

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

type Query = (text: string) => Promise<{ rows: readonly unknown[] }>

/** The template's shape, read from this worker's first fresh clone. */
let templateShape: string | undefined

async function shapeOf(query: Query): Promise<string> {
  return ((await query(SHAPE)).rows[0] as { shape: string }).shape
}

/**
 * Empties a database for the next file (the migrations insert no rows, so empty is as migrated),
 * provided its schema still has the template's shape.
 */
async function empty(query: Query, engine: keyof typeof EMPTYING): Promise<boolean> {
  if (templateShape === undefined || (await shapeOf(query)) !== templateShape) return false
  const statement = ((await query(EMPTYING[engine])).rows[0] as { statement: string | null }).statement
  if (statement) await query(statement)
  return true
}

/** A file's PGlite back for the next file, its session's settings reset too; one that cannot be emptied, or that its test closed, is closed. */
async function giveBackPglite(handle: DatabaseHandle): Promise<void> {
  const query = (text: string) => handle.query(text, [])
  try {
    if (await empty(query, 'pglite')) {
      await query('reset all')
      emptiedPglite.push(handle)
      return
    }
  } catch {
    // Closed by its test, or broken: not used again.
  }
  await handle.close().catch(() => {})
}

/**
 * A file's database on the server back for the next file. Its pool is closed (session settings
 * and LISTENs go with its connections), and so is any connection the file left behind, as
 * DROP DATABASE … WITH (FORCE) would. One that cannot be emptied is dropped.
 */
async function giveBackOnServer(server: string, name: string, handle: DatabaseHandle): Promise<void> {
  await handle.close()
  // A lock a stray connection still holds would hold TRUNCATE too: give up after two seconds.
  const client = new pg.Client({ connectionString: databaseUrl(server, name), options: '-c lock_timeout=2000' })
  let emptiedIt = false
  try {
    await client.connect()
    await client.query(
      'select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
    )
    emptiedIt = await empty((text) => client.query(text), 'postgres')
  } catch {
    emptiedIt = false
  } finally {
    await client.end().catch(() => {})
  }
  if (emptiedIt) emptiedOnServer.push(name)
  else await dropDatabase(server, name)
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
