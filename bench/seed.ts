import { sql } from 'kysely'
import pg from 'pg'
import { resolveSession, startSession } from '../src/accounts/sessions/sessions.js'
import { createDatabase, type DatabaseHandle, type Db } from '../src/db/connect.js'
import { migrateToLatest } from '../src/db/migrate.js'
import type { SigningAlg } from '../src/db/schema.js'
import { randomToken, sha256Hex } from '../src/lib/crypto.js'
import { hashPassword } from '../src/lib/passwords.js'
import {
  generateAccessToken,
  generateAuthorizationCode,
  generateClientId,
  generateClientSecret,
  generateRefreshToken,
} from '../src/lib/tokens.js'
import { generateDeviceCode } from '../src/oauth/device/user-code.js'
import { upsertGrant } from '../src/repositories/grants.js'
import type { ServerKind } from './cases.js'

/*
 * Seeding through Gatehouse's own code: its migrations, its token formats and digests, its
 * session start. Bulk rows (pools of tokens and codes, the million-token table) go in as
 * set-based INSERTs, because one-by-one inserts would take longer than the benchmark.
 *
 * Per-user quotas (docs/operating/limits.md) decide whose rows these are: a code
 * exchange revokes its (user, application)'s live tokens beyond the newest MAX_TOKENS_PER_GRANT,
 * so every seeded code belongs to a user of its own who holds no tokens, and the token pools
 * (fresh, cached, growth fill) belong to the consented user, for whom no code is ever seeded
 * and no measured request issues a token.
 */

const CODE_TTL_MS = 10 * 60_000
/** RFC 8628 §3.2: what the server answers a device by default (DEVICE_CODE_INTERVAL_SECONDS); every seeded code has it. */
const DEVICE_INTERVAL_SECONDS = 5
const DEVICE_CODE_TTL_MS = 10 * 60_000
const SESSION_TTL_MS = 24 * 3600_000
/**
 * The refresh application's lifetimes (docs/expiring-tokens.md "What the owner chooses"): an
 * hour's access tokens, refresh tokens of 30 days; each seeded family ends when its first token
 * does, well within REFRESH_TOKEN_FAMILY_MAX_DAYS (365 by default).
 */
const ACCESS_TOKEN_TTL_SECONDS = 3600
const REFRESH_TOKEN_TTL_SECONDS = 2_592_000
const CHUNK = 50_000
/** A batch at least this large is followed by VACUUM ANALYZE, so autovacuum does not start mid-run. */
const VACUUM_AFTER = 1000

/** Drops and recreates `name` on the server of `url` (a database the benchmark owns). */
export async function recreateDatabase(url: string, name: string): Promise<string> {
  const admin = new URL(url)
  admin.pathname = '/postgres'
  const client = new pg.Client({ connectionString: admin.toString() })
  await client.connect()
  try {
    const ident = pg.escapeIdentifier(name)
    await client.query(`drop database if exists ${ident} with (force)`)
    await client.query(`create database ${ident}`)
  } finally {
    await client.end()
  }
  const target = new URL(url)
  target.pathname = `/${name}`
  return target.toString()
}

export async function dropDatabase(url: string, name: string): Promise<void> {
  const admin = new URL(url)
  admin.pathname = '/postgres'
  const client = new pg.Client({ connectionString: admin.toString() })
  await client.connect()
  try {
    await client.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`)
  } finally {
    await client.end()
  }
}

export async function openMigrated(url: string): Promise<DatabaseHandle> {
  // No statement timeout: a bulk INSERT of a million tokens is seeding, not a request.
  const handle = await createDatabase({ url, pool: { max: 4, statementTimeoutMs: 0 } })
  await migrateToLatest(handle.db)
  return handle
}

/** A seeded application: what a request sends and what seeded rows reference. */
export interface BenchApplication {
  clientId: string
  clientSecret: string
  applicationId: string
}

/** Whose codes or tokens a pool holds: the bench client's `read`, or an OpenID application's identity scopes. */
export interface SeedTarget {
  applicationId: string
  scopes: readonly string[]
  /** Codes only: the session's claims an authorize with `openid` records for the ID Token. */
  identity: boolean
}

export interface SeedInfo extends BenchApplication {
  /** One argon2 hash, shared by every seeded user (none of them ever logs in). */
  passwordHash: string
  redirectUri: string
  /**
   * Has granted the application `read`; holds every seeded access token (the pools and the
   * growth fill), and no code is ever seeded for them, so no exchange revokes those tokens.
   */
  consentedUserId: string
  /** Has not: authorize answers with the consent page. */
  newUserId: string
  newCookie: string
  /**
   * One application per ID Token signing algorithm (docs/openid-connect.md: applications choose it, stored in
   * applications.id_token_alg), for the rows that exchange codes granted `openid`.
   */
  openid: Record<SigningAlg, BenchApplication>
  /**
   * A machine application an operator granted `read` for the client credentials grant (RFC 6749
   * §4.4, docs/decisions/021-machine-tokens.md), for the row that issues it tokens.
   */
  machine: BenchApplication
  /**
   * A web application (confidential) whose owner turned on the device flow (RFC 8628,
   * docs/decisions/020-device-codes.md), for the row that polls its pending device codes.
   */
  device: BenchApplication
  /**
   * A web application (confidential) whose owner chose expiring access tokens with rotating
   * refresh tokens (docs/expiring-tokens.md), for the row that refreshes.
   */
  refresh: BenchApplication
}

export const SCOPE = 'read'
/** What a relying party signing users in typically asks for (docs/openid-connect.md). */
export const OPENID_SCOPES = ['openid', 'email', 'profile'] as const
const SIGNING_ALGS = ['RS256', 'ES256', 'EdDSA'] as const satisfies readonly SigningAlg[]

/** The bench client's own pools: `read` for the consented user. */
export const plainTarget = (seed: SeedInfo): SeedTarget => ({ applicationId: seed.applicationId, scopes: [SCOPE], identity: false })

/** Codes or tokens of the OpenID application that signs with `alg`, granted OPENID_SCOPES. */
export const openidTarget = (seed: SeedInfo, alg: SigningAlg): SeedTarget => ({
  applicationId: seed.openid[alg].applicationId,
  scopes: OPENID_SCOPES,
  identity: true,
})

/**
 * The benchmark's own rows, written directly: a user, and an application with a fresh
 * secret stored as its digest. Neither quota nor audit applies to a seeded database; the
 * requests measured run through the real code.
 */
async function seedUser(db: Db, email: string, passwordHash: string, now: Date): Promise<{ id: string }> {
  const row = await db
    .insertInto('users')
    .values({ email, password_hash: passwordHash, created_at: now })
    .onConflict((oc) => oc.column('email').doNothing())
    .returning('id')
    .executeTakeFirst()
  if (!row) throw new Error(`seed: ${email} already exists`)
  return row
}

async function seedApplication(
  db: Db,
  ownerId: string,
  redirectUri: string,
  now: Date,
  options: { name: string; scopes: string[]; idTokenAlg?: SigningAlg } = { name: 'Bench client', scopes: ['read', 'write'] },
) {
  const clientSecret = generateClientSecret()
  const application = await db
    .insertInto('applications')
    .values({
      client_id: generateClientId(),
      secret_hash: sha256Hex(clientSecret),
      owner_id: ownerId,
      name: options.name,
      description: 'Seeded by npm run bench',
      redirect_uris: [redirectUri],
      allowed_scopes: options.scopes,
      require_pkce: false,
      allow_implicit: false,
      ...(options.idTokenAlg ? { id_token_alg: options.idTokenAlg } : {}),
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow()
  return { application, clientSecret }
}

async function seedOpenIdApplications(db: Db, ownerId: string, redirectUri: string, now: Date) {
  const apps: Partial<Record<SigningAlg, BenchApplication>> = {}
  for (const alg of SIGNING_ALGS) {
    const scopes = [...OPENID_SCOPES, 'read']
    const { application, clientSecret } = await seedApplication(db, ownerId, redirectUri, now, {
      name: `Bench ${alg}`,
      scopes,
      idTokenAlg: alg,
    })
    apps[alg] = { clientId: application.client_id, clientSecret, applicationId: application.id }
  }
  return apps as Record<SigningAlg, BenchApplication>
}

export async function seedBase(db: Db): Promise<SeedInfo> {
  const now = new Date()
  const passwordHash = await hashPassword('bench-password-123')
  const consented = await seedUser(db, 'consented@bench.example', passwordHash, now)
  const fresh = await seedUser(db, 'new@bench.example', passwordHash, now)

  const redirectUri = 'https://client.bench.example/callback'
  const { application, clientSecret } = await seedApplication(db, consented.id, redirectUri, now)
  await upsertGrant(db, { userId: consented.id, applicationId: application.id, scopes: [SCOPE], resources: null, now })

  return {
    passwordHash,
    clientId: application.client_id,
    clientSecret,
    redirectUri,
    applicationId: application.id,
    consentedUserId: consented.id,
    newUserId: fresh.id,
    newCookie: await startSession(db, fresh.id, now, SESSION_TTL_MS),
    openid: await seedOpenIdApplications(db, consented.id, redirectUri, now),
    machine: await seedMachineApplication(db, consented.id, redirectUri, now),
    device: await seedDeviceApplication(db, consented.id, redirectUri, now),
    refresh: await seedRefreshApplication(db, consented.id, redirectUri, now),
  }
}

async function seedRefreshApplication(db: Db, ownerId: string, redirectUri: string, now: Date): Promise<BenchApplication> {
  const { application, clientSecret } = await seedApplication(db, ownerId, redirectUri, now, { name: 'Bench refresh', scopes: [SCOPE] })
  await db
    .updateTable('applications')
    .set({ access_token_ttl_seconds: ACCESS_TOKEN_TTL_SECONDS, refresh_token_ttl_seconds: REFRESH_TOKEN_TTL_SECONDS })
    .where('id', '=', application.id)
    .execute()
  return { clientId: application.client_id, clientSecret, applicationId: application.id }
}

async function seedDeviceApplication(db: Db, ownerId: string, redirectUri: string, now: Date): Promise<BenchApplication> {
  const { application, clientSecret } = await seedApplication(db, ownerId, redirectUri, now, { name: 'Bench device', scopes: [SCOPE] })
  await db.updateTable('applications').set({ allow_device_flow: true }).where('id', '=', application.id).execute()
  return { clientId: application.client_id, clientSecret, applicationId: application.id }
}

async function seedMachineApplication(db: Db, ownerId: string, redirectUri: string, now: Date): Promise<BenchApplication> {
  const { application, clientSecret } = await seedApplication(db, ownerId, redirectUri, now, { name: 'Bench machine', scopes: [SCOPE] })
  await db
    .updateTable('applications')
    .set({ kind: 'machine', client_credentials_scopes: [SCOPE] })
    .where('id', '=', application.id)
    .execute()
  return { clientId: application.client_id, clientSecret, applicationId: application.id }
}

/**
 * Runs bulk INSERTs on one connection with foreign-key triggers off
 * (session_replication_role = replica): every row references the seeded application and users
 * that exist (or are inserted by the same statement), so the checks would only double the
 * seeding time.
 */
async function bulk(db: Db, insert: (conn: Db) => Promise<void>): Promise<void> {
  await db.connection().execute(async (conn) => {
    await sql`set session_replication_role = replica`.execute(conn)
    try {
      await insert(conn)
    } finally {
      await sql`set session_replication_role = origin`.execute(conn)
    }
  })
}

/** Keeps the emails of each bulk-inserted batch of users unique; lower case (users_email_lower). */
const emailSalt = () => generateClientId().toLowerCase()

async function inChunks(db: Db, items: string[], insert: (conn: Db, chunk: string[]) => Promise<unknown>): Promise<void> {
  await bulk(db, async (conn) => {
    for (let i = 0; i < items.length; i += CHUNK) await insert(conn, items.slice(i, i + CHUNK))
  })
}

/**
 * `n` live access tokens for the consented user, of the bench client with `read` unless `target`
 * says otherwise (UserInfo's rows: an OpenID application's identity scopes); returns their plaintexts.
 */
export async function insertTokens(db: Db, seed: SeedInfo, n: number, target: SeedTarget = plainTarget(seed)): Promise<string[]> {
  const tokens = Array.from({ length: n }, generateAccessToken)
  await inChunks(db, tokens, (conn, chunk) =>
    sql`insert into access_tokens (token_hash, application_id, user_id, scopes, created_at)
        select h, ${target.applicationId}::uuid, ${seed.consentedUserId}::uuid, ${[...target.scopes]}::text[], now()
        from unnest(${chunk.map(sha256Hex)}::text[]) as h`.execute(conn),
  )
  if (n >= VACUUM_AFTER) await vacuum(db, ['access_tokens'])
  return tokens
}

/**
 * `n` unused authorization codes, valid 10 minutes, bound to the registered redirect URI, each
 * for a user of its own ("exchanger" users, inserted by the same statement). docs/operating/limits.md: the
 * exchange's quota check then finds a user with no live tokens for the application, the common
 * case, rather than one user holding every token the benchmark seeded. The users are real rows:
 * the exchange inserts its token with foreign keys checked.
 *
 * With an `identity` target (the OpenID Connect rows of docs/performance.md) each code also carries what an authorize with `openid`
 * records for the ID Token (src/oauth/authorize/authorization.ts): a nonce, auth_time, amr and the
 * session's sid, so the signed ID Token has the claims and the size of a real one.
 */
export async function insertCodes(db: Db, seed: SeedInfo, n: number, target: SeedTarget = plainTarget(seed)): Promise<string[]> {
  const codes = Array.from({ length: n }, generateAuthorizationCode)
  const expires = new Date(Date.now() + CODE_TTL_MS)
  const identity = target.identity
  await inChunks(db, codes, (conn, chunk) => {
    const salt = emailSalt()
    return sql`with src as (
          select h, i, gen_random_uuid() as user_id from unnest(${chunk.map(sha256Hex)}::text[]) with ordinality as t(h, i)
        ), exchangers as (
          insert into users (id, email, password_hash, created_at)
          select user_id, 'exchanger-' || ${salt} || '-' || i || '@bench.example', ${seed.passwordHash}, now() from src
        )
        insert into authorization_codes
          (code_hash, application_id, user_id, scopes, redirect_uri, created_at, expires_at, nonce, auth_time, amr, sid)
        select h, ${target.applicationId}::uuid, user_id, ${[...target.scopes]}::text[], ${seed.redirectUri}, now(), ${expires},
          case when ${identity}::boolean then encode(sha256(convert_to(h || ':nonce', 'UTF8')), 'base64') end,
          case when ${identity}::boolean then now() end,
          case when ${identity}::boolean then array['pwd']::text[] end,
          case when ${identity}::boolean then left(encode(sha256(convert_to(h || ':sid', 'UTF8')), 'hex'), 32) end
        from src`.execute(conn)
  })
  if (n >= VACUUM_AFTER) await vacuum(db, ['users', 'authorization_codes'])
  return codes
}

/**
 * `n` pending device authorizations of the device application, valid 10 minutes as the server's
 * (LIFETIMES.deviceCodeMs), stored as POST /oauth/device_authorization stores them: the device
 * code's SHA-256, never the code (src/repositories/device-authorizations.ts). Their user codes are
 * digests of nothing a person could type: no row of the benchmark answers on the /device page.
 * Returns the device codes' plaintexts. Each is polled once (a fresh pool), so its poll is never
 * within the interval of an earlier one and the answer is authorization_pending (RFC 8628 §3.5).
 */
export async function insertDeviceCodes(db: Db, seed: Pick<SeedInfo, 'device'>, n: number, now = new Date()): Promise<string[]> {
  const codes = Array.from({ length: n }, generateDeviceCode)
  const expires = new Date(now.getTime() + DEVICE_CODE_TTL_MS)
  await inChunks(db, codes, (conn, chunk) =>
    sql`insert into device_authorizations
          (device_code_hash, user_code_hash, application_id, scopes, status, created_at, expires_at, interval_seconds)
        select h, encode(sha256(convert_to('bench-user-code:' || h, 'UTF8')), 'hex'), ${seed.device.applicationId}::uuid,
          array[${SCOPE}]::text[], 'pending', ${now}, ${expires}, ${DEVICE_INTERVAL_SECONDS}
        from unnest(${chunk.map(sha256Hex)}::text[]) as h`.execute(conn),
  )
  if (n >= VACUUM_AFTER) await vacuum(db, ['device_authorizations'])
  return codes
}

/**
 * `n` live refresh tokens of the refresh application, each the first of a family of its own, as
 * the code exchange starts one (src/repositories/refresh-tokens.ts startFamily): the application's
 * lifetimes, granted `read`, bound to no DPoP key. Stored as digests of tokens in Gatehouse's
 * format (generateRefreshToken); returns their plaintexts. Each is sent once (a fresh pool), so
 * no refresh is reuse, which would end its family (docs/expiring-tokens.md). Each family belongs
 * to a user of its own ("refresher" users, inserted by the same statement), as each code does
 * (insertCodes): the quota kept after each refresh (MAX_TOKENS_PER_GRANT) then finds one live
 * token, the common case. The access tokens those families were issued with are left out: the
 * rotation neither reads nor needs them.
 */
export async function insertRefreshTokens(
  db: Db,
  seed: Pick<SeedInfo, 'refresh' | 'passwordHash'>,
  n: number,
  now = new Date(),
): Promise<string[]> {
  const tokens = Array.from({ length: n }, generateRefreshToken)
  const expires = new Date(now.getTime() + REFRESH_TOKEN_TTL_SECONDS * 1000)
  await inChunks(db, tokens, (conn, chunk) =>
    sql`with src as (
          select h, i, gen_random_uuid() as user_id, gen_random_uuid() as family_id
          from unnest(${chunk.map(sha256Hex)}::text[]) with ordinality as t(h, i)
        ), refreshers as (
          insert into users (id, email, password_hash, created_at)
          select user_id, 'refresher-' || ${emailSalt()} || '-' || i || '@bench.example', ${seed.passwordHash}, ${now} from src
        ), families as (
          insert into refresh_token_families
            (id, application_id, user_id, scopes, access_token_ttl_seconds, refresh_token_ttl_seconds, created_at, expires_at)
          select family_id, ${seed.refresh.applicationId}::uuid, user_id, array[${SCOPE}]::text[], ${ACCESS_TOKEN_TTL_SECONDS},
            ${REFRESH_TOKEN_TTL_SECONDS}, ${now}, ${expires}
          from src
        )
        insert into refresh_tokens (token_hash, family_id, created_at, expires_at)
        select h, family_id, ${now}, ${expires} from src`.execute(conn),
  )
  if (n >= VACUUM_AFTER) await vacuum(db, ['users', 'refresh_token_families', 'refresh_tokens'])
  return tokens
}

/**
 * `n` users, each logged in (a live session) and having granted the bench application `read`;
 * returns their session cookies. docs/operating/limits.md: authorize under
 * remembered consent issues at most CODE_ISSUE_LIMIT codes a minute per (user, application), so
 * authorize-remembered cycles over many users' sessions. Cookie values and their digests are
 * made with the functions startSession uses (src/accounts/sessions/sessions.ts), and one of them is
 * resolved by Gatehouse's own resolveSession before the benchmark relies on them.
 */
export async function insertConsentedSessions(db: Db, seed: SeedInfo, n: number): Promise<string[]> {
  const cookies = Array.from({ length: n }, () => randomToken(32))
  const now = new Date()
  const expires = new Date(now.getTime() + SESSION_TTL_MS)
  await inChunks(db, cookies, (conn, chunk) =>
    sql`with src as (
          select h, i, gen_random_uuid() as user_id from unnest(${chunk.map(sha256Hex)}::text[]) with ordinality as t(h, i)
        ), holders as (
          insert into users (id, email, password_hash, created_at)
          select user_id, 'remembered-' || ${emailSalt()} || '-' || i || '@bench.example', ${seed.passwordHash}, ${now} from src
        ), consent as (
          insert into grants (user_id, application_id, scopes, created_at, updated_at)
          select user_id, ${seed.applicationId}::uuid, array[${SCOPE}]::text[], ${now}, ${now} from src
        )
        insert into sessions (id_hash, user_id, created_at, expires_at)
        select h, user_id, ${now}, ${expires} from src`.execute(conn),
  )
  if (n > 0 && !(await resolveSession(db, cookies[0]!, now))) throw new Error('seed: a bulk-inserted session does not resolve')
  if (n >= VACUUM_AFTER) await vacuum(db, ['users', 'grants', 'sessions'])
  return cookies
}

export async function countTokens(db: Db): Promise<number> {
  const r = await sql<{ n: string }>`select count(*) as n from access_tokens`.execute(db)
  return Number(r.rows[0]?.n ?? 0)
}

/**
 * Grows access_tokens to `total` rows with filler tokens whose plaintexts nobody knows: one
 * INSERT … SELECT generate_series, digests computed by Postgres. Then VACUUM ANALYZE, as
 * autovacuum would do on a real server before long, and a CHECKPOINT: without it the fill's
 * WAL is written back while the rows after it are measured. In the full run of 2026-11-28
 * 09:33 the 10-million rows ran inside two checkpoints the fill had set off (52 s and 22 s of
 * writes), and measured the write-back of 5 GB, not the size of the table.
 */
export async function fillTokens(db: Db, seed: SeedInfo, total: number): Promise<number> {
  const have = await countTokens(db)
  const missing = total - have
  if (missing > 0) {
    const salt = generateClientId()
    await bulk(db, async (conn) => {
      await sql`insert into access_tokens (token_hash, application_id, user_id, scopes, created_at)
              select encode(sha256(convert_to(${salt} || ':' || g, 'UTF8')), 'hex'),
                     ${seed.applicationId}::uuid, ${seed.consentedUserId}::uuid, array[${SCOPE}]::text[], now()
              from generate_series(1, ${missing}::int) as g`.execute(conn)
    })
  }
  await vacuum(db, ['access_tokens'])
  await sql`checkpoint`.execute(db)
  return countTokens(db)
}

/** After bulk seeding: what autovacuum would soon do anyway, done before anything is measured. */
export async function vacuumAll(db: Db): Promise<void> {
  await sql`vacuum analyze`.execute(db)
}

export async function vacuum(db: Db, tables: string[]): Promise<void> {
  for (const t of tables) await sql`vacuum analyze ${sql.table(t)}`.execute(db)
}

/** Removes what code exchanges issued since `since`, so a growth phase keeps its table size. */
export async function removeExchanged(db: Db, since: Date): Promise<void> {
  await sql`delete from access_tokens where authorization_code_id is not null and created_at >= ${since}`.execute(db)
  await sql`delete from authorization_codes where created_at >= ${since} and consumed_at is not null`.execute(db)
  await vacuum(db, ['access_tokens', 'authorization_codes'])
}

export async function databaseNow(db: Db): Promise<Date> {
  const r = await sql<{ now: Date }>`select now() as now`.execute(db)
  return r.rows[0]!.now
}

/** Tables for baselines B and C, in the same database and on the same server as Gatehouse's. */
export async function createBaselineTables(db: Db, rows: number): Promise<void> {
  await sql`create table bench_rows (id integer primary key, payload text not null, created_at timestamptz not null)`.execute(db)
  await sql`insert into bench_rows select g, encode(sha256(convert_to('row:' || g, 'UTF8')), 'hex'), now()
            from generate_series(1, ${rows}::int) as g`.execute(db)
  await sql`create table bench_writes (id bigserial primary key, payload text not null, created_at timestamptz not null)`.execute(db)
  await vacuum(db, ['bench_rows'])
}

/**
 * Transactions committed or rolled back in `database` so far. Backends publish their counts
 * when they go idle, at most once a second, so over a run of a few seconds this is approximate.
 */
export async function transactionCount(db: Db, database: string): Promise<number> {
  const r = await sql<{ n: string }>`select xact_commit + xact_rollback as n from pg_stat_database where datname = ${database}`.execute(db)
  return Number(r.rows[0]?.n ?? 0)
}

/**
 * The database URL a server of the benchmark connects with: its kind as the connections'
 * `application_name`, so that the backends of a server not under test can be told from those of
 * the server under test (bench/measure.ts).
 */
export function serverDatabaseUrl(url: string, kind: ServerKind): string {
  const named = new URL(url)
  named.searchParams.set('application_name', applicationName(kind))
  return named.toString()
}

export const applicationName = (kind: ServerKind): string => `gatehouse-bench-${kind}`

/** Postgres backends serving `database`, each with the `application_name` its client gave. */
export async function backends(db: Db, database: string): Promise<{ pid: number; applicationName: string }[]> {
  const r = await sql<{ pid: number; application_name: string }>`select pid, application_name from pg_stat_activity
    where datname = ${database} and backend_type = 'client backend'`.execute(db)
  return r.rows.map((row) => ({ pid: row.pid, applicationName: row.application_name }))
}
