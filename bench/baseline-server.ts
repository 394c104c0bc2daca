import { randomBytes } from 'node:crypto'
import { createVerifier, gatehouseVerifier } from '@gatehouse/verifier'
import Fastify from 'fastify'
import pg from 'pg'
import { createDatabase } from '../src/db/connect.js'
import { cachedRoutes } from './cached-routes.js'
import { statementRoutes } from './statement-routes.js'

/*
 * The ceilings Gatehouse is judged against (docs/performance.md "The baselines"): a bare Fastify server
 * with the same pool size as Gatehouse, run as its own process by bench/baselines.ts.
 * A–D: plain `pool.query(text, values)`, as Kysely issues it: no prepared-statement shortcut.
 * E–H and P: Gatehouse's own statements through its database layer (bench/statement-routes.ts).
 * I, J, L, N and O: the read paths' own work through Gatehouse's protocol functions (bench/cached-routes.ts).
 * K: A's route behind the in-process verifier; M: A's route sent K's request.
 */

const port = Number(process.env.PORT)
const rows = Number(process.env.BASELINE_ROWS)
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DATABASE_POOL_MAX ?? 10) })
pool.on('error', () => {})

const app = Fastify({ logger: false })

// A: the ceiling of any Fastify route here.
app.get('/a', async () => ({ status: 'ok', service: 'baseline' }))

// B: one row by primary key.
app.get('/b', async () => {
  const id = 1 + Math.floor(Math.random() * rows)
  const result = await pool.query('select id, payload, created_at from bench_rows where id = $1', [id])
  return result.rows[0]
})

// C: one durable INSERT (autocommit: one commit per request).
app.post('/c', async () => {
  await pool.query('insert into bench_writes (payload, created_at) values ($1, now())', [randomBytes(32).toString('hex')])
  return { status: 'ok' }
})

// D: one durable INSERT and a NOTIFY in the same transaction (one statement, autocommit): what
// announcing a revocation costs in PostgreSQL, whose NOTIFY takes a lock that serialises the
// commits of every transaction that notified (docs/decisions/003-revocation-propagation.md).
app.post('/d', async () => {
  await pool.query(
    `with w as (insert into bench_writes (payload, created_at) values ($1, now()) returning id)
     select pg_notify('bench_d', w.id::text) from w`,
    [randomBytes(32).toString('hex')],
  )
  return { status: 'ok' }
})

// K: A's route guarded by @gatehouse/verifier's Fastify plugin, as a resource API mounts it
// (database mode, its cache warm after the first request per token): what guarding a route
// costs the route, against A in the same process (docs/performance.md "Targets": at least 0.95 × A).
// With a resource (RFC 8707), as an API that checks audiences runs it; the seeded tokens have none.
const verifier = createVerifier({
  mode: 'database',
  database: process.env.DATABASE_URL!,
  resource: 'https://api.example.test',
  issuer: 'https://auth.example.test',
})
await app.register(async (guarded) => {
  await guarded.register(gatehouseVerifier, { verifier })
  guarded.get('/k', async () => ({ status: 'ok', service: 'baseline' }))
})

const gatehouseDb = await createDatabase({ url: process.env.DATABASE_URL, pool: { max: Number(process.env.DATABASE_POOL_MAX ?? 10) } })
await statementRoutes(app, gatehouseDb)
cachedRoutes(app, gatehouseDb)

await app.listen({ port, host: '127.0.0.1' })
const close = () =>
  void app
    .close()
    .then(() => Promise.all([pool.end(), gatehouseDb.close(), verifier.close()]))
    .then(() => process.exit(0))
process.on('SIGTERM', close)
process.on('SIGINT', close)
