import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createDatabase } from '../../src/db/connect.js'
import { manualClock } from '../../src/lib/clock.js'
import { Janitor } from '../../src/limits/janitor.js'
import { JANITOR_TABLES } from '../../src/repositories/janitor.js'
import { type TestContext, buildTestApp } from '../helpers/app.js'
import { type ApplicationFixture, type UserFixture, createApplication, createUser } from '../helpers/factories.js'

/*
 * The janitor (docs/operating/limits.md) on the test's database, PGlite or PostgreSQL. Rows
 * are written with old timestamps directly and the injected clock is moved; nothing sleeps.
 */

const DAY = 86_400_000
const hex = () => randomBytes(32).toString('hex')

let t: TestContext
let user: UserFixture
let app: ApplicationFixture

beforeAll(async () => {
  t = await buildTestApp()
  user = await createUser(t.db)
  app = await createApplication(t.db, { ownerId: user.id })
})
afterAll(async () => {
  await t.close()
})

/** The tables the janitor's rules delete from: expired_access_tokens is a rule of access_tokens, metadata_clients of applications. */
const TABLES = JANITOR_TABLES.filter((t) => t !== 'expired_access_tokens' && t !== 'metadata_clients')

async function counts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  for (const table of TABLES) {
    const row = await t.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow()
    out[table] = Number(row.n)
  }
  return out
}

async function clearAll() {
  for (const table of TABLES) await t.db.deleteFrom(table).execute()
}

/** A day of traffic as it lands in the tables, `at` being that day. */
async function dayOfTraffic(at: Date, n: number) {
  const ms = at.getTime()
  const codes = Array.from({ length: n }, () => ({
    id: crypto.randomUUID(),
    code_hash: hex(),
    application_id: app.id,
    user_id: user.id,
    scopes: ['read'],
    created_at: at,
    expires_at: new Date(ms + 10 * 60_000),
    consumed_at: at,
  }))
  await t.db.insertInto('authorization_codes').values(codes).execute()
  await t.db
    .insertInto('access_tokens')
    .values(
      codes.map((c, i) => ({
        token_hash: hex(),
        application_id: app.id,
        user_id: user.id,
        scopes: ['read'],
        authorization_code_id: c.id,
        created_at: at,
        // Half are revoked the day they are issued; half of the others expire an hour after it
        // (docs/expiring-tokens.md), and are kept REVOKED_TOKEN_RETENTION_DAYS past their expiry.
        revoked_at: i % 2 === 0 ? at : null,
        expires_at: i % 4 === 1 ? new Date(ms + 3600_000) : null,
      })),
    )
    .execute()
  await t.db
    .insertInto('sessions')
    .values(Array.from({ length: n }, () => ({ id_hash: hex(), user_id: user.id, created_at: at, expires_at: new Date(ms + 14 * DAY) })))
    .execute()
  await t.db
    .insertInto('pending_authorizations')
    .values(
      Array.from({ length: n }, () => ({
        user_id: user.id,
        application_id: app.id,
        response_type: 'code',
        scopes: ['read'],
        created_at: at,
        expires_at: new Date(ms + 10 * 60_000),
      })),
    )
    .execute()
  await t.db
    .insertInto('rate_limits')
    .values(Array.from({ length: n }, () => ({ key: `login:${hex()}`, window_start: at, count: 3 })))
    .execute()
  // Mailed links: verification links live 24 hours, and half of them are used the day they are sent.
  await t.db
    .insertInto('email_tokens')
    .values(
      Array.from({ length: n }, (_, i) => ({
        token_hash: hex(),
        purpose: 'verify-email' as const,
        user_id: user.id,
        email: user.email,
        created_at: at,
        expires_at: new Date(ms + DAY),
        used_at: i % 2 === 0 ? at : null,
      })),
    )
    .execute()
  // Second-factor steps (migrations/0010_second_factor.ts): each lives minutes.
  const soon = new Date(ms + 10 * 60_000)
  await t.db
    .insertInto('pending_logins')
    .values(Array.from({ length: n }, () => ({ id_hash: hex(), user_id: user.id, created_at: at, expires_at: soon })))
    .execute()
  await t.db
    .insertInto('webauthn_challenges')
    .values(
      Array.from({ length: n }, () => ({
        id_hash: hex(),
        user_id: null,
        purpose: 'authenticate' as const,
        challenge: hex(),
        expires_at: soon,
      })),
    )
    .execute()
  // Pushed authorization requests (RFC 9126, migration 0012) live a minute.
  await t.db
    .insertInto('pushed_authorization_requests')
    .values(
      Array.from({ length: n }, () => ({
        request_uri_hash: hex(),
        application_id: app.id,
        params: '{}',
        created_at: at,
        expires_at: new Date(ms + 60_000),
      })),
    )
    .execute()
  // Device authorizations (RFC 8628, migration 0020) live 10 minutes, answered or not.
  await t.db
    .insertInto('device_authorizations')
    .values(
      Array.from({ length: n }, () => ({
        device_code_hash: hex(),
        user_code_hash: hex(),
        application_id: app.id,
        scopes: ['read'],
        created_at: at,
        expires_at: new Date(ms + 10 * 60_000),
        interval_seconds: 5,
      })),
    )
    .execute()
  // Refresh-token families (migration 0022) here live a week, absolutely, as do their refresh
  // tokens; DPoP proofs are remembered two minutes.
  const families = await t.db
    .insertInto('refresh_token_families')
    .values(
      Array.from({ length: n }, () => ({
        application_id: app.id,
        user_id: user.id,
        scopes: ['read'],
        sid: null,
        dpop_jkt: null,
        access_token_ttl_seconds: 3600,
        refresh_token_ttl_seconds: 7 * 86400,
        created_at: at,
        expires_at: new Date(ms + 7 * DAY),
        revoked_at: null,
      })),
    )
    .returning('id')
    .execute()
  await t.db
    .insertInto('refresh_tokens')
    .values(families.map((f) => ({ token_hash: hex(), family_id: f.id, created_at: at, expires_at: new Date(ms + 7 * DAY) })))
    .execute()
  await t.db
    .insertInto('dpop_proof_jtis')
    .values(Array.from({ length: n }, () => ({ key_hash: hex(), expires_at: new Date(ms + 120_000) })))
    .execute()
  // An enrolment is one per account: each day's come from accounts opened that day.
  const enrolling = await t.db
    .insertInto('users')
    .values(Array.from({ length: n }, () => ({ email: `${hex()}@example.com`, password_hash: 'x', created_at: at })))
    .returning('id')
    .execute()
  await t.db
    .insertInto('totp_enrolments')
    .values(enrolling.map((u) => ({ user_id: u.id, secret_sealed: hex(), expires_at: soon })))
    .execute()
}

describe('the janitor', () => {
  it('leaves every table bounded after a simulated month of traffic', async () => {
    await clearAll()
    const start = new Date('2026-03-01T12:00:00Z').getTime()
    for (let day = 0; day < 31; day++) await dayOfTraffic(new Date(start + day * DAY), 20)
    const before = await counts()
    expect(before).toMatchObject({
      authorization_codes: 620,
      access_tokens: 620,
      sessions: 620,
      pending_authorizations: 620,
      pushed_authorization_requests: 620,
      rate_limits: 620,
      email_tokens: 620,
      pending_logins: 620,
      webauthn_challenges: 620,
      totp_enrolments: 620,
      refresh_token_families: 620,
      refresh_tokens: 620,
      dpop_proof_jtis: 620,
    })

    // The morning after the last day of traffic.
    t.clock.set(new Date(start + 30 * DAY + 20 * 3600_000))
    const { ran, removed } = await t.deps.janitor.runOnce()
    expect(ran).toBe(true)
    const after = await counts()
    // Only what is not dead yet: the last day's codes (kept a day past expiry) and rate-limit
    // windows (kept a day), the sessions of the last 14 days, tokens revoked within 30 days,
    // every live token, tokens expired within 30 days, and the last day's mailed links (valid 24
    // hours, used or not). Nothing grows with the length of the month.
    expect(after).toEqual({
      authorization_codes: 20,
      access_tokens: 5 * 31 + 5 * 30 + 10 * 30,
      pending_authorizations: 0,
      pushed_authorization_requests: 0,
      sessions: 20 * 14,
      rate_limits: 20,
      // Audit events have their own test (test/integration/audit/retention.test.ts).
      audit_events: 0,
      email_tokens: 20,
      pending_logins: 0,
      webauthn_challenges: 0,
      totp_enrolments: 0,
      signing_keys: 0,
      device_authorizations: 0,
      // The families of the last seven days, and their refresh tokens.
      refresh_token_families: 20 * 7,
      refresh_tokens: 20 * 7,
      dpop_proof_jtis: 0,
    })
    for (const table of TABLES) {
      const own = table === 'access_tokens' ? removed.access_tokens + removed.expired_access_tokens : removed[table]
      expect(own).toBe(before[table]! - after[table]!)
    }
    // The first day's expired tokens, 30 days and 20 hours after they expired.
    expect(removed.expired_access_tokens).toBe(5)

    // Another month: the same bounds, whatever came before.
    for (let day = 31; day < 62; day++) await dayOfTraffic(new Date(start + day * DAY), 20)
    t.clock.set(new Date(start + 61 * DAY + 20 * 3600_000))
    await t.deps.janitor.runOnce()
    expect(await counts()).toMatchObject({
      authorization_codes: 20,
      pending_authorizations: 0,
      pushed_authorization_requests: 0,
      sessions: 280,
      rate_limits: 20,
      email_tokens: 20,
      pending_logins: 0,
      webauthn_challenges: 0,
      totp_enrolments: 0,
    })
  })

  it('keeps what is still in use: live sessions, open rate-limit windows, fresh codes, pending requests and mailed links', async () => {
    await clearAll()
    const now = new Date('2026-06-01T00:00:00Z')
    t.clock.set(now)
    await dayOfTraffic(new Date(now.getTime() - 60_000), 5)
    await t.deps.janitor.runOnce()
    expect(await counts()).toEqual({
      authorization_codes: 5,
      access_tokens: 5,
      pending_authorizations: 5,
      pushed_authorization_requests: 5,
      sessions: 5,
      rate_limits: 5,
      audit_events: 0,
      email_tokens: 5,
      pending_logins: 5,
      webauthn_challenges: 5,
      totp_enrolments: 5,
      signing_keys: 0,
      device_authorizations: 5,
      refresh_token_families: 5,
      refresh_tokens: 5,
      dpop_proof_jtis: 5,
    })
  })

  it('deletes at most 1,000 rows a statement: 2,500 expired codes go in 3 statements', async () => {
    await clearAll()
    const now = new Date('2026-07-01T00:00:00Z')
    t.clock.set(now)
    const old = new Date(now.getTime() - 3 * DAY)
    for (let i = 0; i < 5; i++) {
      await t.db
        .insertInto('authorization_codes')
        .values(
          Array.from({ length: 500 }, () => ({
            code_hash: hex(),
            application_id: app.id,
            user_id: user.id,
            scopes: ['read'],
            created_at: old,
            expires_at: old,
          })),
        )
        .execute()
    }
    const queries = t.queries.count
    const { removed } = await t.deps.janitor.runOnce()
    expect(removed.authorization_codes).toBe(2500)
    // 3 for the codes (1,000, 1,000, 500), 1 for each of the other tables (nothing to
    // delete), and on PostgreSQL the advisory lock.
    expect(t.queries.count - queries).toBe(3 + (JANITOR_TABLES.length - 1) + (t.deps.database.kind === 'postgres' ? 1 : 0))
    expect(await counts()).toMatchObject({ authorization_codes: 0 })
  })

  it('counts the rows it removed in /metrics, by table', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics' })
    const line = (table: string) => res.body.split('\n').find((l) => l.startsWith(`gatehouse_janitor_rows_removed_total{table="${table}"}`))
    expect(line('authorization_codes')).toBeDefined()
    expect(Number(line('authorization_codes')!.split(' ')[1])).toBe(t.deps.janitor.removedTotal.authorization_codes)
    expect(t.deps.janitor.removedTotal.authorization_codes).toBeGreaterThanOrEqual(2500 + 620)
    expect(res.body).toMatch(/^gatehouse_janitor_failed_runs_total 0$/m)
  })

  it('survives a failing database: each failed run is logged in one line and retried at the next interval', async () => {
    const database = await createDatabase({ dataDir: 'memory://' })
    await database.close()
    const lines: string[] = []
    const janitor = new Janitor({
      database,
      clock: manualClock(),
      log: { info: () => {}, warn: (_obj, msg) => lines.push(msg) },
      intervalMs: 5,
      revokedTokenRetentionMs: 30 * DAY,
      auditRetentionMs: 90 * DAY,
      metadataClientUnusedMs: 30 * DAY,
    })
    janitor.start()
    try {
      await expect.poll(() => janitor.failedRuns).toBeGreaterThanOrEqual(2)
      expect(lines[0]).toMatch(/^janitor run failed; retrying in \d+ s$/)
    } finally {
      await janitor.stop()
    }
  })
})
