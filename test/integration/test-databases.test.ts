import { sql } from 'kysely'
import { expect, it } from 'vitest'
import { createTestDatabase } from '../helpers/db.js'
import { createUser } from '../helpers/factories.js'

/*
 * The database every test file gets (test/helpers/db.ts) is as migrated and empty, also when the
 * worker hands it on from an earlier file: that file's rows are gone, and a database whose schema
 * a test changed without undoing it is not handed on at all. Both engines.
 */

const columns = async (db: Awaited<ReturnType<typeof createTestDatabase>>['handle']['db']) =>
  (
    await sql<{
      n: number
    }>`select count(*)::int as n from information_schema.columns where table_name = 'users' and column_name = 'left_behind'`.execute(db)
  ).rows[0]!.n

it('hands on no rows and no changed schema from a database given back', async () => {
  const altered = await createTestDatabase()
  await sql`alter table users add column left_behind int`.execute(altered.handle.db)
  expect(await columns(altered.handle.db)).toBe(1)
  await altered.destroy()
  const filled = await createTestDatabase()
  await createUser(filled.handle.db)
  await filled.destroy()

  for (let i = 0; i < 3; i++) {
    const next = await createTestDatabase()
    try {
      expect(await columns(next.handle.db)).toBe(0)
      const users = await next.handle.db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
      expect(Number(users.n)).toBe(0)
    } finally {
      await next.destroy()
    }
  }
})
