import { parseArgs } from 'node:util'
import { LIVE_TOKEN_SQL } from '@gatehouse/verifier/shared'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { resolveSession } from '../src/accounts/sessions/sessions.js'
import type { Database } from '../src/db/schema.js'
import { sha256Hex } from '../src/lib/crypto.js'
import { generateAccessToken, generateAuthorizationCode } from '../src/lib/tokens.js'
import { QUOTAS } from '../src/limits/policy.js'
import { loadConfig } from '../src/config.js'
import { revokeTokenOfClient } from '../src/repositories/access-tokens.js'
import { insertCodeUnderGrant } from '../src/repositories/authorization-codes.js'
import { consumeCodeAndInsertToken } from '../src/repositories/code-exchange.js'
import {
  createBaselineTables,
  dropDatabase,
  insertCodes,
  insertConsentedSessions,
  insertTokens,
  openMigrated,
  recreateDatabase,
  seedBase,
  vacuumAll,
} from './seed.js'
import { rememberedCodeRow } from './statement-routes.js'

/*
 * npm run bench:explain (README "Performance"): what PostgreSQL does for each hot path's statements, as
 * `EXPLAIN (ANALYZE, BUFFERS, WAL)` of the statement Gatehouse sends, on a database seeded as
 * the benchmark seeds it (bench/seed.ts), beside baseline C's INSERT. Each statement is
 * captured from Gatehouse's own repository function, prepared as the server prepares it, run
 * `--runs` times (each in a transaction rolled back, so every run finds the same rows) and
 * reported by its median execution time, with the buffers and WAL of the last run: the
 * "EXPLAIN" column of docs/scaling.md's profiles. Planning is not counted: a prepared statement
 * is planned once per connection.
 */

const { values: args } = parseArgs({ options: { runs: { type: 'string' }, rows: { type: 'string' }, plans: { type: 'boolean' } } })
const RUNS = Number(args.runs ?? 50)
const ROWS = Number(args.rows ?? 10_000)
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const DB_NAME = `gatehouse_bench_explain_${process.pid}`

interface Captured {
  sql: string
  parameters: readonly unknown[]
}

interface Profile {
  statement: string
  executionMs: number
  sharedHit: number
  sharedRead: number
  sharedDirtied: number
  walRecords: number
  walFpi: number
  walBytes: number
  triggersMs: number
  plan: string
}

class Rollback extends Error {}

/** The statements `fn` sends, captured from Kysely's log while it runs in a transaction that is rolled back. */
async function capture(db: Kysely<Database>, log: Captured[], fn: (trx: Kysely<Database>) => Promise<unknown>): Promise<Captured[]> {
  log.length = 0
  await db
    .transaction()
    .execute(async (trx) => {
      await fn(trx)
      throw new Rollback()
    })
    .catch((err: unknown) => {
      if (!(err instanceof Rollback)) throw err
    })
  // Kysely logs the transaction's own begin and rollback too.
  return log.splice(0).filter((q) => !/^\s*(begin|rollback|commit)\b/i.test(q.sql))
}

interface PlanNode {
  'Shared Hit Blocks'?: number
  'Shared Read Blocks'?: number
  'Shared Dirtied Blocks'?: number
  'WAL Records'?: number
  'WAL FPI'?: number
  'WAL Bytes'?: number
}

interface ExplainJson {
  Plan: PlanNode
  'Execution Time': number
  Triggers?: { Time: number }[]
}

/** A parameter as an SQL literal: EXECUTE under EXPLAIN takes no bound parameters. Untyped, so the prepared statement's types apply. */
function literal(client: pg.Client, value: unknown): string {
  if (value === null || value === undefined) return 'null'
  if (value instanceof Date) return client.escapeLiteral(value.toISOString())
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (Array.isArray(value)) return client.escapeLiteral(`{${value.map((v) => `"${String(v).replace(/["\\]/g, '\\$&')}"`).join(',')}}`)
  return client.escapeLiteral(String(value))
}

async function profile(client: pg.Client, statement: string, q: Captured): Promise<Profile> {
  const name = `explain_${statement.replace(/\W+/g, '_')}`
  await client.query(`prepare ${name} as ${q.sql}`)
  const placeholders = q.parameters.map((v) => literal(client, v)).join(', ')
  const times: number[] = []
  let last: ExplainJson | undefined
  let text = ''
  for (let i = 0; i < RUNS; i++) {
    await client.query('begin')
    const res = await client.query<{ 'QUERY PLAN': ExplainJson[] }>(
      `explain (analyze, buffers, wal, format json) execute ${name}(${placeholders})`,
    )
    await client.query('rollback')
    if (i === RUNS - 1 && args.plans) {
      await client.query('begin')
      const plain = await client.query<{ 'QUERY PLAN': string }>(
        `explain (analyze, buffers, wal, costs off, timing off) execute ${name}(${placeholders})`,
      )
      await client.query('rollback')
      text = plain.rows.map((r) => r['QUERY PLAN']).join('\n')
    }
    last = res.rows[0]!['QUERY PLAN'][0]!
    times.push(last['Execution Time'])
  }
  await client.query(`deallocate ${name}`)
  times.sort((a, b) => a - b)
  const top = last!.Plan
  return {
    statement,
    executionMs: times[Math.floor(times.length / 2)]!,
    sharedHit: top['Shared Hit Blocks'] ?? 0,
    sharedRead: top['Shared Read Blocks'] ?? 0,
    sharedDirtied: top['Shared Dirtied Blocks'] ?? 0,
    walRecords: top['WAL Records'] ?? 0,
    walFpi: top['WAL FPI'] ?? 0,
    walBytes: top['WAL Bytes'] ?? 0,
    triggersMs: (last!.Triggers ?? []).reduce((sum, t) => sum + t.Time, 0),
    plan: text,
  }
}

async function main(): Promise<void> {
  const url = await recreateDatabase(ADMIN_URL, DB_NAME)
  const handle = await openMigrated(url)
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  const log: Captured[] = []
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool }),
    log: (event) => {
      if (event.level === 'query') log.push({ sql: event.query.sql, parameters: event.query.parameters })
    },
  })
  const client = new pg.Client({ connectionString: url })
  try {
    const seed = await seedBase(handle.db)
    await createBaselineTables(handle.db, 1000)
    const [code] = await insertCodes(handle.db, seed, ROWS)
    const [token] = await insertTokens(handle.db, seed, ROWS)
    const [session] = await insertConsentedSessions(handle.db, seed, ROWS)
    await vacuumAll(handle.db)
    const now = new Date()
    const secretHash = sha256Hex(seed.clientSecret)
    const app = await handle.db.selectFrom('applications').selectAll().where('id', '=', seed.applicationId).executeTakeFirstOrThrow()
    const user = await resolveSession(handle.db, session!, now)
    if (!user) throw new Error('seed: the session does not resolve')
    const codeRow = rememberedCodeRow(generateAuthorizationCode(), user.id, seed.redirectUri, now)
    const codesPerMinute = loadConfig({}).quotas.codesPerMinute

    const statements: [string, Captured][] = [
      [
        'baseline C: one INSERT',
        { sql: 'insert into bench_writes (payload, created_at) values ($1, now())', parameters: ['x'.repeat(64)] },
      ],
      [
        'code exchange',
        (
          await capture(db, log, (trx) =>
            consumeCodeAndInsertToken(trx, {
              clientId: seed.clientId,
              secretHash,
              codeHash: sha256Hex(code!),
              tokenHash: sha256Hex(generateAccessToken()),
              now,
              redirectUri: seed.redirectUri,
              verifier: undefined,
            }),
          )
        )[0]!,
      ],
      [
        'revocation',
        (
          await capture(db, log, (trx) =>
            revokeTokenOfClient(trx, { clientId: seed.clientId, secretHash, tokenHash: sha256Hex(token!), now, channel: 'bench_explain' }),
          )
        )[0]!,
      ],
      [
        'remembered consent: the session',
        (await capture(db, log, (trx) => resolveSession(trx, session!, now, { userAgent: 'bench', ip: '127.0.0.1' })))[0]!,
      ],
      [
        'remembered consent: the code',
        (await capture(db, log, (trx) => insertCodeUnderGrant(trx, codeRow, app, user, codesPerMinute, QUOTAS.codesPerGrant.windowMs)))[0]!,
      ],
      ['introspection miss: the token', { sql: LIVE_TOKEN_SQL, parameters: [sha256Hex(token!)] }],
    ]

    await client.connect()
    const profiles: Profile[] = []
    for (const [name, q] of statements) profiles.push(await profile(client, name, q))

    const pad = (s: string | number, n: number) => String(s).padStart(n)
    console.log(
      `EXPLAIN (ANALYZE, BUFFERS, WAL), median execution of ${RUNS} runs, buffers and WAL of the last; ${ROWS} seeded rows per table`,
    )
    console.log(
      `${'statement'.padEnd(34)} ${pad('exec ms', 8)} ${pad('triggers', 9)} ${pad('hit', 5)} ${pad('read', 5)} ${pad('dirtied', 8)} ${pad('WAL rec', 8)} ${pad('FPI', 4)} ${pad('WAL B', 7)}`,
    )
    for (const p of profiles) {
      console.log(
        `${p.statement.padEnd(34)} ${pad(p.executionMs.toFixed(3), 8)} ${pad(p.triggersMs.toFixed(3), 9)} ${pad(p.sharedHit, 5)} ${pad(p.sharedRead, 5)} ${pad(p.sharedDirtied, 8)} ${pad(p.walRecords, 8)} ${pad(p.walFpi, 4)} ${pad(p.walBytes, 7)}`,
      )
    }
    if (args.plans) for (const p of profiles) console.log(`\n-- ${p.statement}\n${p.plan}`)
  } finally {
    await client.end().catch(() => {})
    await db.destroy()
    await handle.close()
    await dropDatabase(ADMIN_URL, DB_NAME)
  }
}

await main()
