import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REVOCATION_CHANNEL } from '@gatehouse/verifier/shared'
import { type Verifier, createVerifier } from '@gatehouse/verifier'
import { type TestDatabase, createTestDatabase } from '../../helpers/db.js'
import { type ApplicationFixture, type UserFixture, createAccessToken } from '../../helpers/factories.js'
import { NOTICE_WAIT_MS, isActive, msUntil, refuses, revokeThrough, seed, tokenInfoStatus } from '../../helpers/propagation.js'
import { type TestContext, buildTestApp, listenOnFreePort } from '../../helpers/app.js'

/*
 * A revocation reaches every cache through its notice (docs/decisions/003-revocation-propagation.md):
 * other Gatehouse instances, database-mode verifiers (LISTEN) and introspection-mode
 * verifiers (the revocation stream). Across processes needs a Postgres server; with PGlite the
 * same is shown between two app instances sharing the one embedded database. The waits are
 * bounded by NOTICE_WAIT_MS, a safety net: the tests assert that the notice arrives, not how fast.
 */

describe('two Gatehouse instances sharing one database, in this process', () => {
  let shared: TestDatabase
  let a: TestContext
  let b: TestContext
  let baseA: string
  let baseB: string
  let user: UserFixture
  let app: ApplicationFixture
  let rs: ApplicationFixture
  let dbVerifier: Verifier
  let streamVerifier: Verifier

  beforeAll(async () => {
    shared = await createTestDatabase()
    a = await buildTestApp({}, shared)
    b = await buildTestApp({}, shared)
    baseA = await listenOnFreePort(a)
    baseB = await listenOnFreePort(b)
    ;({ user, application: app, resourceServer: rs } = await seed(shared.handle.db))
    dbVerifier = createVerifier({ mode: 'database', database: shared.handle })
    streamVerifier = createVerifier({
      mode: 'introspection',
      introspectionUrl: `${baseA}/oauth/introspect`,
      revocationStreamUrl: `${baseA}/oauth/revocations/stream`,
      clientId: rs.clientId,
      clientSecret: rs.clientSecret,
    })
    await Promise.all([dbVerifier.ready(), streamVerifier.ready()])
  })
  afterAll(async () => {
    await dbVerifier?.close()
    await streamVerifier?.close()
    await a?.close()
    await b?.close()
    await shared?.destroy()
  })

  it('a token revoked through one instance is refused by the other and by both verifiers once the notice arrives', async () => {
    for (let i = 0; i < 5; i++) {
      const tok = await createAccessToken(shared.handle.db, { userId: user.id, applicationId: app.id })
      expect((await streamVerifier.verify(`Bearer ${tok.token}`)).ok).toBe(true) // warms A too
      expect((await dbVerifier.verify(`Bearer ${tok.token}`)).ok).toBe(true)
      expect(await tokenInfoStatus(baseB, tok.token)).toBe(200)

      await revokeThrough(baseB, app, tok)
      expect(await tokenInfoStatus(baseB, tok.token)).toBe(401)
      await msUntil(async () => !(await isActive(baseA, rs, tok.token)), NOTICE_WAIT_MS)
      await msUntil(refuses(dbVerifier, tok.token), NOTICE_WAIT_MS)
      await msUntil(refuses(streamVerifier, tok.token), NOTICE_WAIT_MS)
    }
  })

  it('a NOTIFY alone (another process revoked the row) reaches both instances', async () => {
    const tok = await createAccessToken(shared.handle.db, { userId: user.id, applicationId: app.id })
    expect(await isActive(baseA, rs, tok.token)).toBe(true)
    expect(await isActive(baseB, rs, tok.token)).toBe(true)
    await shared.handle.db.updateTable('access_tokens').set({ revoked_at: new Date() }).where('token_hash', '=', tok.digest).execute()
    // Still cached on both: only the notice can tell them.
    expect(await isActive(baseA, rs, tok.token)).toBe(true)
    await sql`select pg_notify(${REVOCATION_CHANNEL}, ${tok.digest})`.execute(shared.handle.db)
    await msUntil(async () => !(await isActive(baseA, rs, tok.token)) && !(await isActive(baseB, rs, tok.token)), NOTICE_WAIT_MS)
  })
})
