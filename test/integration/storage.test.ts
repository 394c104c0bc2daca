import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { createDatabase } from '../../src/db/connect.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { findUserByEmail } from '../../src/repositories/users.js'
import { createUser } from '../helpers/factories.js'

// The embedded database is what `npm start` uses with no DATABASE_URL: its data must
// survive a restart, and migrations must be safe to run again on every start.
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-pglite-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

it('keeps PGlite data across a restart and re-runs migrations as a no-op', async () => {
  const first = await createDatabase({ dataDir: dir })
  expect((await migrateToLatest(first.db)).results?.every((r) => r.status === 'Success')).toBe(true)
  await createUser(first.db, { email: 'persist@example.com' })
  await first.close()

  const second = await createDatabase({ dataDir: dir })
  expect((await migrateToLatest(second.db)).results).toEqual([])
  expect(await findUserByEmail(second.db, 'persist@example.com')).toMatchObject({ email: 'persist@example.com' })
  await second.close()
})
