import { afterAll, beforeAll, expect, it } from 'vitest'
import { ensureBuilt } from '../helpers/build.js'
import { createTestDatabase, type TestDatabase } from '../helpers/db.js'
import { createUser } from '../helpers/factories.js'
import { runBuiltCli } from '../helpers/gatehouse-process.js'

/*
 * The built `gatehouse` binary (dist/src/cli.js) as a child process against a PostgreSQL
 * server, with the server's environment variables (on PGlite:
 * test/integration/operator/cli-process.test.ts).
 */

const gatehouse = runBuiltCli

let testDb: TestDatabase
beforeAll(async () => {
  await ensureBuilt()
  testDb = await createTestDatabase()
}, 180_000)
afterAll(async () => {
  await testDb?.destroy()
})

it('adds an operator, lists it as JSON, and answers an unknown email with 1 and one line', async () => {
  await createUser(testDb.handle.db, { email: 'first-operator@example.com', emailVerified: true })
  const env = { DATABASE_URL: testDb.url! }
  expect(await gatehouse(env, 'admin', 'add', 'first-operator@example.com')).toEqual({
    code: 0,
    stdout: 'first-operator@example.com is now an operator.\n',
    stderr: '',
  })
  const audit = await testDb.handle.db
    .selectFrom('audit_events')
    .selectAll()
    .where('event', '=', 'operator.added')
    .executeTakeFirstOrThrow()
  expect(audit).toMatchObject({ actor_id: null, client_address: null, detail: 'From the command line' })
  const list = await gatehouse(env, 'admin', 'list', '--json')
  expect(list.code).toBe(0)
  expect(JSON.parse(list.stdout)).toEqual([expect.objectContaining({ email: 'first-operator@example.com' })])
  expect(await gatehouse(env, 'users', 'suspend', 'ghost@example.com')).toEqual({
    code: 1,
    stdout: '',
    stderr: 'gatehouse: No user has the email ghost@example.com.\n',
  })
})

it('says in one line when the database cannot be reached', async () => {
  const { code, stderr } = await gatehouse(
    { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', DATABASE_CONNECT_TIMEOUT_MS: '1000' },
    'admin',
    'list',
  )
  expect(code).toBe(1)
  expect(stderr.trim().split('\n')).toHaveLength(1)
  expect(stderr).toMatch(/^gatehouse: /)
})
