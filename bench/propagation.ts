/*
 * How long a revocation takes to reach every cache (docs/decisions/003-revocation-propagation.md): two Gatehouse processes on one
 * Postgres; each token is warmed everywhere, revoked through process B, and timed until
 *   - an introspection-mode verifier following A's revocation stream refuses it,
 *   - a database-mode verifier (its own LISTEN connection) refuses it,
 *   - A's own introspection answers active: false.
 * Times run from the moment the revocation request is sent, so they include the revocation
 * itself. Needs a Postgres server:
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:propagation [-- --runs 100]
 */
import { createVerifier } from '@gatehouse/verifier'
import { createTestDatabase, serverUrl } from '../test/helpers/db.js'
import { basicAuth, createAccessToken } from '../test/helpers/factories.js'
import { startGatehouse } from '../test/helpers/gatehouse-process.js'
import { msUntil, revokeThrough, seed } from '../test/helpers/propagation.js'
import { benchArguments } from './arguments.js'
import { median, percentile } from './stats.js'

const args = benchArguments('npm run bench:propagation --', { runs: { type: 'string' } }, 'docs/performance.md "Revocation propagation"')
if (!serverUrl) {
  console.error('Set TEST_DATABASE_URL (or DATABASE_URL) to a Postgres server: propagation across processes needs one.')
  process.exit(1)
}
const runs = Number(args.runs ?? 100)

const testDb = await createTestDatabase()
const env = { DATABASE_URL: testDb.url!, DATABASE_POOL_MAX: '4' }
const [A, B] = await Promise.all([startGatehouse(env), startGatehouse(env)])
const db = testDb.handle.db
// The test's own seed: the user, their application, and an application the operator marked as a
// resource server, which alone may introspect and follow the revocation stream.
const { user, application: app, resourceServer: rs } = await seed(db)
const streamVerifier = createVerifier({
  mode: 'introspection',
  introspectionUrl: `${A.url}/oauth/introspect`,
  revocationStreamUrl: `${A.url}/oauth/revocations/stream`,
  clientId: rs.clientId,
  clientSecret: rs.clientSecret,
})
const dbVerifier = createVerifier({ mode: 'database', database: testDb.url! })
await Promise.all([streamVerifier.ready(), dbVerifier.ready()])

const introspectA = async (token: string) => {
  const res = await fetch(`${A.url}/oauth/introspect`, {
    method: 'POST',
    headers: { authorization: basicAuth(rs.clientId, rs.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: `token=${token}`,
  })
  return ((await res.json()) as { active: boolean }).active
}

const samples = { stream: [] as number[], database: [] as number[], introspection: [] as number[] }
try {
  for (let i = 0; i < runs; i++) {
    const tok = await createAccessToken(db, { userId: user.id, applicationId: app.id })
    const header = `Bearer ${tok.token}`
    if (!(await streamVerifier.verify(header)).ok || !(await dbVerifier.verify(header)).ok) throw new Error('warm-up failed')
    await fetch(`${B.url}/oauth/token/info`, { headers: { authorization: header } })
    const started = performance.now()
    await revokeThrough(B.url, app, tok)
    const [stream, database, introspection] = await Promise.all([
      msUntil(() => streamVerifier.verifyCached(header)?.ok !== true, 5000, started),
      msUntil(() => dbVerifier.verifyCached(header)?.ok !== true, 5000, started),
      msUntil(async () => !(await introspectA(tok.token)), 5000, started),
    ])
    samples.stream.push(stream)
    samples.database.push(database)
    samples.introspection.push(introspection)
  }
} finally {
  await streamVerifier.close()
  await dbVerifier.close()
  await Promise.all([A.stop(), B.stop()])
  await testDb.destroy()
}

const row = (name: string, s: number[]) =>
  `| ${name} | ${median(s).toFixed(1)} | ${percentile(s, 90).toFixed(1)} | ${Math.max(...s).toFixed(1)} |`
console.log(`Revocation propagation, ${runs} revocations through POST /oauth/revoke of process B, milliseconds:\n`)
console.log('| refused by | median | p90 | worst |')
console.log('|---|---|---|---|')
console.log(row("introspection-mode verifier (A's revocation stream)", samples.stream))
console.log(row('database-mode verifier (LISTEN)', samples.database))
console.log(row("process A's introspection", samples.introspection))
