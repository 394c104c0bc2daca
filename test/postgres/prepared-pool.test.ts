import { Kysely, type KyselyPlugin, PostgresDialect, type QueryResult, sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DatabaseAvailability } from '../../src/db/availability.js'
import { preparedStatementPool } from '../../src/db/prepared-pool.js'
import { type TestDatabase, createTestDatabase } from '../helpers/db.js'

/*
 * src/db/prepared-pool.ts under Kysely's own executor and PostgresDialect, built as
 * src/db/connect.ts builds it: DML goes out as named prepared statements, the results are
 * Kysely's (row counts included), every plugin sees them, and a connection always goes back.
 */
interface Table {
  executor_rows: { id: number; label: string }
}

describe('the prepared-statement pool under Kysely (needs TEST_DATABASE_URL)', () => {
  let testDb: TestDatabase
  let pool: pg.Pool
  let db: Kysely<Table>
  let availability: DatabaseAvailability

  beforeAll(async () => {
    testDb = await createTestDatabase()
    pool = new pg.Pool({ connectionString: testDb.url!, max: 2 })
    availability = new DatabaseAvailability()
    db = new Kysely<Table>({ dialect: new PostgresDialect({ pool: preparedStatementPool(pool, availability) }) })
    await sql`create table executor_rows (id int primary key, label text not null)`.execute(db)
  })
  afterAll(async () => {
    await db?.destroy()
    await testDb?.destroy()
  })

  it("answers with Kysely's row counts", async () => {
    const inserted = await db
      .insertInto('executor_rows')
      .values([
        { id: 1, label: 'a' },
        { id: 2, label: 'b' },
        { id: 3, label: 'c' },
      ])
      .executeTakeFirstOrThrow()
    expect(inserted.numInsertedOrUpdatedRows).toBe(3n)
    const updated = await db.updateTable('executor_rows').set({ label: 'x' }).where('id', '<', 3).executeTakeFirstOrThrow()
    expect(updated.numUpdatedRows).toBe(2n)
    const deleted = await db.deleteFrom('executor_rows').where('id', '=', 3).executeTakeFirstOrThrow()
    expect(deleted.numDeletedRows).toBe(1n)
    const rows = await db.selectFrom('executor_rows').select(['id', 'label']).orderBy('id').execute()
    expect(rows).toEqual([
      { id: 1, label: 'x' },
      { id: 2, label: 'x' },
    ])
  })

  it('sends DML as a named prepared statement, and runs a transaction on one connection that rolls back', async () => {
    await expect(
      db.transaction().execute(async (trx) => {
        await trx.insertInto('executor_rows').values({ id: 10, label: 'in transaction' }).execute()
        const seen = await trx.selectFrom('executor_rows').select('id').where('id', '=', 10).execute()
        expect(seen).toEqual([{ id: 10 }])
        // The same connection: it holds the statements this transaction prepared.
        const prepared = await sql<{ statement: string }>`select statement from pg_prepared_statements where name like 'gh\_%'`.execute(trx)
        expect(prepared.rows.map((r) => r.statement)).toEqual(
          expect.arrayContaining([expect.stringMatching(/^insert into "executor_rows"/)]),
        )
        throw new Error('roll back')
      }),
    ).rejects.toThrow('roll back')
    expect(await db.selectFrom('executor_rows').select('id').where('id', '=', 10).execute()).toEqual([])
  })

  it('hands every result to the plugins, in order, inside and outside transactions', async () => {
    const seen: string[] = []
    const tagging = (tag: string): KyselyPlugin => ({
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        seen.push(tag)
        return { ...args.result, rows: args.result.rows.map((r) => ({ ...r, [tag]: true })) } as QueryResult<never>
      },
    })
    const tagged = db.withPlugin(tagging('first')).withPlugin(tagging('second'))
    const outside = await tagged.selectFrom('executor_rows').select('id').where('id', '=', 1).execute()
    expect(outside).toEqual([{ id: 1, first: true, second: true }])
    const inside = await tagged.transaction().execute((trx) => trx.selectFrom('executor_rows').select('id').where('id', '=', 2).execute())
    expect(inside).toEqual([{ id: 2, first: true, second: true }])
    expect(seen).toEqual(['first', 'second', 'first', 'second'])
    await tagged.withoutPlugins().selectFrom('executor_rows').select('id').execute()
    expect(seen).toHaveLength(4)
  })

  it('gives the connection back after a failed statement', async () => {
    for (let i = 0; i < 4; i++) await expect(sql`select * from no_such_table`.execute(db)).rejects.toThrow(/no_such_table/)
    expect(pool.totalCount - pool.idleCount).toBe(0)
    expect((await sql<{ one: number }>`select 1 as one`.execute(db)).rows).toEqual([{ one: 1 }])
  })

  // Last: it closes the handle.
  it('refuses a statement after the handle is closed without taking it for an outage', async () => {
    await db.destroy()
    await expect(sql`select 1`.execute(db)).rejects.toThrow(/destroyed|after calling end/)
    expect(availability.up).toBe(true)
  })
})
