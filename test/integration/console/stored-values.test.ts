import { sql } from 'kysely'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { SESSION_COOKIE } from '../../../src/http/session.js'
import { sha256 } from '../../../src/lib/crypto.js'
import { buildTestApp, type TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { applicationForm, createApplicationViaConsole, textById } from '../../helpers/console.js'

/*
 * After the account and console flows, nothing in the database can be replayed: passwords are
 * argon2id, client secrets and session ids SHA-256 digests (docs/decisions/002-token-format.md).
 * Every row of every table is dumped as text, which covers every text and text[] column.
 */

let t: TestContext
beforeAll(async () => {
  t = await buildTestApp()
})
afterAll(async () => {
  await t.close()
})

async function dumpDatabase(): Promise<string> {
  const tables = await sql<{ name: string }>`
    select table_schema || '.' || table_name as name from information_schema.tables
    where table_schema not in ('pg_catalog', 'information_schema') and table_type = 'BASE TABLE'
  `.execute(t.db)
  expect(tables.rows.map((r) => r.name)).toEqual(expect.arrayContaining(['public.users', 'public.applications', 'public.sessions']))
  const parts: string[] = []
  for (const { name } of tables.rows) {
    const [schema, table] = name.split('.') as [string, string]
    const rows = await sql<{ row: string }>`select r::text as row from ${sql.table(`${schema}.${table}`)} as r`.execute(t.db)
    parts.push(`== ${name}`, ...rows.rows.map((r) => r.row))
  }
  return parts.join('\n')
}

it('holds no plaintext password, client secret or session id after the flows', async () => {
  const password = 'Plaintext Password 12345'
  const wrongPassword = 'Wrong Password Guess 987'
  const s = new BrowserSession(t.app)
  await s.get('/signup')
  await s.post('/signup', { email: 'stored@example.com', password })
  await s.get('/login')
  await s.post('/login', { email: 'stored@example.com', password: wrongPassword })
  await s.logIn('stored@example.com', password)
  const firstSession = s.cookies.get(SESSION_COOKIE)!
  await s.logIn('stored@example.com', password)
  const sessionId = s.cookies.get(SESSION_COOKIE)!

  const kept = await createApplicationViaConsole(s, { name: 'Kept' })
  const regenerated = await s.post(`/applications/${kept.id}/secret`, {})
  const secondSecret = textById(regenerated.body, 'client-secret')!
  await s.get(`/applications/${kept.id}/edit`)
  await s.post(`/applications/${kept.id}`, applicationForm({ name: 'Kept, renamed' }))
  const removed = await createApplicationViaConsole(s, { name: 'Removed' })
  await s.get(`/applications/${removed.id}/delete`)
  await s.post(`/applications/${removed.id}/delete`, {})

  const dump = await dumpDatabase()
  const plaintexts = {
    password,
    wrongPassword,
    firstSecret: kept.clientSecret,
    secondSecret,
    removedSecret: removed.clientSecret,
    sessionId,
    firstSession,
    csrfSecret: s.cookies.get('gatehouse_csrf') ?? 'no csrf cookie',
  }
  for (const [what, value] of Object.entries(plaintexts)) {
    expect(value.length, what).toBeGreaterThan(8)
    expect(dump.includes(value), `${what} found in the database`).toBe(false)
  }
  // The dump does hold the stored forms, so the search above looked at real data.
  expect(dump).toContain(sha256(secondSecret))
  expect(dump).toContain(sha256(sessionId))
  expect(dump).toMatch(/\$argon2id\$v=19\$/)
  expect(dump).toContain(kept.clientId)
  expect(dump).not.toContain(sha256(kept.clientSecret))
})
