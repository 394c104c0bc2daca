import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { type Verifier, createVerifier } from '@gatehouse/verifier'
import { LIVE_TOKEN_VIEW } from '@gatehouse/verifier/shared'
import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { sha256Hex } from '../../src/lib/crypto.js'
import { revoke } from '../../src/revocation/revoke.js'
import { type TestContext, buildTestApp } from '../helpers/app.js'
import {
  type ApplicationFixture,
  type UserFixture,
  basicAuth,
  createAccessToken,
  createApplication,
  createUser,
} from '../helpers/factories.js'
import { NOTICE_WAIT_MS, msUntil } from '../helpers/propagation.js'

/*
 * What a database-mode resource API needs of PostgreSQL (packages/verifier/README.md "Database
 * mode: the least it needs"): SELECT on the view gatehouse_live_tokens_v2 and LISTEN, which needs
 * no grant. Its verifier connects as a role made as that README says and given nothing else, so
 * none of the tables: the view runs with its owner's rights (docs/decisions/017-live-token-view.md).
 * Roles belong to the whole server, not to this file's database: the role's name is this file's
 * own, and afterAll drops it with its privileges.
 */

/**
 * The role as the package README's "Database mode: the least it needs" makes it, its block read
 * from the README (never copied here) with this file's role name and password.
 */
function readmeStatements(role: string, password: string): string[] {
  const readme = readFileSync(new URL('../../packages/verifier/README.md', import.meta.url), 'utf8')
  const section = readme.slice(readme.indexOf('### Database mode: the least it needs'))
  const block = /```sql\n([\s\S]*?)```/.exec(section)![1]!
  const statements = block
    .split('\n')
    .filter((line) => !line.startsWith('--'))
    .join('\n')
    .replaceAll('orders_api', pg.escapeIdentifier(role))
    .replace("'…'", pg.escapeLiteral(password))
    .split(';')
    .map((statement) => statement.trim())
    .filter((statement) => statement !== '')
  expect(statements).toEqual([expect.stringMatching(/^create role /), `grant select on ${LIVE_TOKEN_VIEW} to ${pg.escapeIdentifier(role)}`])
  return statements
}

let t: TestContext
let role: string | undefined
let roleUrl: string
let verifier: Verifier | undefined
let user: UserFixture
let app: ApplicationFixture

beforeAll(async () => {
  t = await buildTestApp()
  const name = `gatehouse_rs_${process.pid}_${randomBytes(4).toString('hex')}`
  const password = randomBytes(16).toString('hex')
  const [create, ...grants] = readmeStatements(name, password)
  await sql.raw(create!).execute(t.db)
  role = name
  for (const statement of grants) await sql.raw(statement).execute(t.db)
  const url = new URL(t.testDb.url!)
  url.username = name
  url.password = password
  roleUrl = url.toString()
  verifier = createVerifier({ mode: 'database', database: roleUrl, now: () => t.clock().getTime() })
  user = await createUser(t.db, { email: 'scout@example.com' })
  app = await createApplication(t.db, { ownerId: user.id })
})
afterAll(async () => {
  await verifier?.close()
  if (role !== undefined) {
    await sql.raw(`drop owned by ${pg.escapeIdentifier(role)}`).execute(t.db)
    await sql.raw(`drop role if exists ${pg.escapeIdentifier(role)}`).execute(t.db)
  }
  await t?.close()
})

it('gives the role no access to the tables behind the view', async () => {
  const client = new pg.Client({ connectionString: roleUrl })
  await client.connect()
  try {
    for (const table of ['access_tokens', 'applications', 'users']) {
      await expect(client.query(`select 1 from ${table} limit 1`)).rejects.toThrow(`permission denied for table ${table}`)
    }
    expect((await client.query(`select count(*)::int as n from ${LIVE_TOKEN_VIEW}`)).rows).toEqual([{ n: 0 }])
  } finally {
    await client.end()
  }
})

it('verifies a live token and refuses a revoked one through the view alone', async () => {
  const live = await createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes: ['read'] })
  const revoked = await createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes: ['read'] })
  await t.db.updateTable('access_tokens').set({ revoked_at: t.clock() }).where('token_hash', '=', revoked.digest).execute()

  const accepted = await verifier!.verify(`Bearer ${live.token}`, 'read')
  expect(accepted).toMatchObject({
    ok: true,
    token: { userId: user.id, applicationId: app.id, clientId: app.clientId, username: 'scout@example.com', scopes: ['read'] },
  })
  expect(await verifier!.verify(`Bearer ${revoked.token}`, 'read')).toMatchObject({ ok: false, status: 401 })
})

it('verifies a machine token (no user) through the view alone, as kind client with the client as subject', async () => {
  const machine = await createApplication(t.db, { kind: 'machine', clientCredentialsScopes: ['read'] })
  const res = await t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { authorization: basicAuth(machine.clientId, machine.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=client_credentials',
  })
  const token = res.json<{ access_token: string }>().access_token
  expect(await verifier!.verify(`Bearer ${token}`, 'read')).toMatchObject({
    ok: true,
    token: { kind: 'client', userId: null, subject: machine.clientId, clientId: machine.clientId, username: null, scopes: ['read'] },
  })
})

it('listens on the revocation channel and drops a token revoked after it was cached', async () => {
  await verifier!.ready()
  expect(verifier!.notifications).toBe('connected')
  const token = await createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes: ['read'] })
  const bearer = `Bearer ${token.token}`
  expect((await verifier!.verify(bearer, 'read')).ok).toBe(true)
  expect(verifier!.verifyCached(bearer, 'read')?.ok).toBe(true)

  const revokedNow = await revoke(
    t.revocation,
    { kind: 'token-of-client', clientId: app.clientId, secretHash: sha256Hex(app.clientSecret), tokenHash: token.digest },
    t.clock(),
  )
  expect(revokedNow).toBe(1)
  // The test's clock stands still, so the cached answer would outlive the test without the notice.
  await msUntil(() => verifier!.verifyCached(bearer, 'read')?.ok !== true, NOTICE_WAIT_MS)
  expect(await verifier!.verify(bearer, 'read')).toMatchObject({ ok: false, status: 401 })
})
