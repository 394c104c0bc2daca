import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { INSERT_CODE_UNDER_GRANT } from '../../src/repositories/authorization-codes.js'
import { type TestDatabase, createTestDatabase } from '../helpers/db.js'

/*
 * Remembered consent's one statement counts the (user, application)'s codes of the last minute
 * (the code quota). It runs as a named prepared statement, whose generic plan is made once per
 * connection, often while the table's statistics are younger than its rows: the count must then
 * still read the (user, application, created_at) index, not every code of the application
 * through authorization_codes_application_id_idx (src/repositories/authorization-codes.ts).
 * A server-only test: PGlite does not share PostgreSQL's plan cache settings.
 */
let db: TestDatabase
let client: pg.Client

beforeAll(async () => {
  db = await createTestDatabase()
  client = new pg.Client({ connectionString: db.url })
  await client.connect()
})
afterAll(async () => {
  await client?.end()
  await db?.destroy()
})

it("counts the quota through the (user, application, created_at) index in the statement's generic plan", async () => {
  await client.query('set plan_cache_mode = force_generic_plan')
  await client.query(`prepare remembered as ${INSERT_CODE_UNDER_GRANT}`)
  const params = (
    await client.query<{ n: number }>(`select cardinality(parameter_types) as n from pg_prepared_statements where name = 'remembered'`)
  ).rows[0]!.n
  const plan = await client.query<{ 'QUERY PLAN': string }>(`explain execute remembered(${Array(params).fill('null').join(', ')})`)
  const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n')
  const recent = text.slice(text.indexOf('CTE recent'), text.indexOf('CTE issued'))
  expect(recent).toContain('authorization_codes_user_application_created_idx')
  expect(recent).not.toContain('authorization_codes_application_id_idx')
})
