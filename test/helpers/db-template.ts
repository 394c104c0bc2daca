import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { migrateToLatest } from '../../src/db/migrate.js'
import type { Database } from '../../src/db/schema.js'

/*
 * The migrated database every test file clones (test/helpers/db.ts explains why). Built by
 * test/global-setup.ts, which vitest runs outside the projects' resolve conditions, so this
 * module reaches the database through kysely, pg and PGlite directly, not src/db/connect.ts
 * (which imports the verifier package by its "source" condition).
 */

/** What a test file clones: a database on the server, or a PGlite data directory dumped to a tar file. */
export type DatabaseTemplate = { kind: 'postgres'; name: string } | { kind: 'pglite'; dumpFile: string }

declare module 'vitest' {
  export interface ProvidedContext {
    databaseTemplate?: DatabaseTemplate
  }
}

const root = join(import.meta.dirname, '../..')
/** PGlite's shared buffers in the test databases (see pgliteTemplateFile). */
export const TEST_SHARED_BUFFERS = '8MB'

/** Builds the migrated template for this run against `serverUrl` (or PGlite); the cleanup drops it. */
export async function createDatabaseTemplate(
  serverUrl: string | undefined,
): Promise<{ template: DatabaseTemplate; cleanup(): Promise<void> }> {
  if (!serverUrl) return { template: { kind: 'pglite', dumpFile: await pgliteTemplateFile() }, cleanup: async () => {} }
  // Named after the run: two checkouts testing against one server never share a template.
  const name = `gatehouse_template_${process.pid}_${randomBytes(4).toString('hex')}`
  await adminQuery(serverUrl, `create database ${pg.escapeIdentifier(name)}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  // Closed before any file clones it: CREATE DATABASE … TEMPLATE refuses a template with a session.
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url.toString(), max: 1 }) }) })
  try {
    await migrateToLatest(db)
  } finally {
    await db.destroy()
  }
  return { template: { kind: 'postgres', name }, cleanup: () => dropDatabase(serverUrl, name) }
}

/**
 * The migrated PGlite data directory as a tar file under node_modules/.cache, named by a digest of
 * migrations/, the migrator and the PGlite version: built by the first run, read by the next ones.
 */
async function pgliteTemplateFile(): Promise<string> {
  const digest = createHash('sha256')
  digest.update(readFileSync(join(root, 'node_modules/@electric-sql/pglite/package.json')))
  for (const file of readdirSync(join(root, 'migrations')).sort()) {
    digest.update(`\0${file}\0`).update(readFileSync(join(root, 'migrations', file)))
  }
  digest.update(readFileSync(join(root, 'src/db/migrate.ts')))
  digest.update(readFileSync(join(root, 'test/helpers/db-template.ts')))
  const dir = join(root, 'node_modules/.cache/gatehouse-test')
  const file = join(dir, `pglite-${digest.digest('hex').slice(0, 16)}.tar`)
  if (existsSync(file)) return file
  const [{ PGlite }, { PGliteDialect }] = await Promise.all([import('@electric-sql/pglite'), import('kysely-pglite-dialect')])
  const client = new PGlite('memory://')
  const db = new Kysely<Database>({ dialect: new PGliteDialect(client) })
  let dump: Blob
  try {
    await migrateToLatest(db)
    // Every PGlite starts by zeroing its shared buffers: PostgreSQL's default of 128 MB cost each
    // test file about a second of CPU, while a file's database is a few megabytes. Written into
    // the template's postgresql.auto.conf, so it holds for the test databases only, never for
    // Gatehouse's own PGlite.
    await client.exec(`alter system set shared_buffers = '${TEST_SHARED_BUFFERS}'`)
    // Uncompressed: loading it is faster than loading a gzipped one.
    dump = await client.dumpDataDir('none')
  } finally {
    await db.destroy()
  }
  mkdirSync(dir, { recursive: true })
  // Written aside and renamed: a run starting meanwhile sees the whole file or none.
  const partial = `${file}.${process.pid}.partial`
  writeFileSync(partial, new Uint8Array(await dump.arrayBuffer()))
  renameSync(partial, file)
  return file
}

export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  await adminQuery(serverUrl, `drop database if exists ${pg.escapeIdentifier(name)} with (force)`)
}

export async function adminQuery(serverUrl: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl })
  await client.connect()
  try {
    await client.query(text)
  } finally {
    await client.end()
  }
}
