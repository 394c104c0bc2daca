import { sql } from 'kysely'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { SESSION_COOKIE } from '../../../src/http/session.js'
import { sha256Hex } from '../../../src/lib/crypto.js'
import { buildTestApp, type TestContext } from '../../helpers/app.js'
import { captureLog } from '../../helpers/capture-log.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { applicationForm, createApplicationViaConsole, textById } from '../../helpers/console.js'
import { linkTo } from '../../helpers/mailbox.js'

/*
 * After the account and console flows, nothing in the database or the log can be replayed:
 * passwords are argon2id; client secrets, session ids and the tokens of mailed links
 * (verification, password reset, email change) SHA-256 digests (docs/decisions/002-token-format.md).
 * Every row of every table is dumped as text, which covers every text and text[] column.
 */

let t: TestContext
const { stream: logStream, lines: logLines } = captureLog()
beforeAll(async () => {
  t = await buildTestApp({ LOG_LEVEL: 'debug' }, undefined, { logStream })
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

/** The token of the link to `path` in the newest mail to `to`. */
function tokenMailed(to: string, path: string): { link: string; token: string } {
  const link = linkTo(t.mailbox.last(to), path)
  if (!link) throw new Error(`no ${path} link in the mail to ${to}`)
  return { link, token: new URL(link, 'http://x').searchParams.get('token')! }
}

it('holds no plaintext password, client secret, session id or mailed token after the flows', async () => {
  const firstPassword = 'Plaintext Password 12345'
  const password = 'Plaintext Password 67890'
  const wrongPassword = 'Wrong Password Guess 987'
  const s = new BrowserSession(t.app)
  await s.get('/signup')
  await s.post('/signup', { email: 'stored@example.com', password: firstPassword })
  const verification = tokenMailed('stored@example.com', '/verify-email')
  await s.verifyEmail(verification.link, firstPassword)
  // A password reset, through its link.
  await s.get('/forgot-password')
  expect((await s.post('/forgot-password', { email: 'stored@example.com' })).statusCode).toBe(200)
  const reset = tokenMailed('stored@example.com', '/reset-password')
  await s.get(reset.link)
  expect((await s.post('/reset-password', { token: reset.token, password })).statusCode).toBe(303)
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
  // An email change, asked but not confirmed: its link's token is stored too.
  await s.get('/account/email')
  expect((await s.post('/account/email', { new_email: 'moved@example.com', current_password: password })).statusCode).toBe(200)
  const change = tokenMailed('moved@example.com', '/confirm-email')

  const dump = await dumpDatabase()
  const plaintexts = {
    firstPassword,
    password,
    verificationToken: verification.token,
    resetToken: reset.token,
    changeToken: change.token,
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
  const log = logLines.join('')
  for (const [what, value] of Object.entries({ verification: verification.token, reset: reset.token, change: change.token })) {
    expect(dump, `${what} token's digest`).toContain(sha256Hex(value))
    expect(log.includes(value), `${what} token in the log`).toBe(false)
    expect(log.includes(value.slice(4, 20)), `part of the ${what} token in the log`).toBe(false)
  }
  // The pages the links open were logged, with the token redacted.
  expect(log).toMatch(/"url":"\/verify-email\?token=\[REDACTED\]"/)
  expect(log).toMatch(/"url":"\/reset-password\?token=\[REDACTED\]"/)
  expect(dump).toContain(sha256Hex(secondSecret))
  expect(dump).toContain(sha256Hex(sessionId))
  expect(dump).toMatch(/\$argon2id\$v=19\$/)
  expect(dump).toContain(kept.clientId)
  expect(dump).not.toContain(sha256Hex(kept.clientSecret))
})
