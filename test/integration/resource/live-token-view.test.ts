import { type Verifier, createVerifier } from '@gatehouse/verifier'
import { LIVE_TOKEN_SQL, LIVE_TOKEN_VIEW, LIVE_TOKEN_VIEW_V1, LIVE_TOKEN_VIEW_V2, LIVE_TOKEN_VIEW_V3 } from '@gatehouse/verifier/shared'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AccessTokenFixture, type ApplicationFixture, basicAuth, createAccessToken } from '../../helpers/factories.js'
import { resourceServerTestFile } from '../../helpers/file-set-up.js'

/*
 * The one definition of a live token, the view gatehouse_live_tokens_v4 (and _v1 to _v3 for
 * verifiers of earlier releases: docs/decisions/017-live-token-view.md, 021-machine-tokens.md,
 * 022-bound-and-expiring-tokens.md, 025-audiences.md), on both engines: its columns are a contract, reading
 * it costs the plan the join it replaced cost, and the server (introspection, token info, the
 * RFC 7009 check) and a database-mode verifier accept exactly its rows, also once a later
 * migration redefines it.
 */

const { t, user, app, rs } = resourceServerTestFile({ userEmail: 'keeper@example.com', resourceServerName: 'Resource server' })
let verifier: Verifier

beforeAll(async () => {
  verifier = createVerifier({ mode: 'database', database: t.deps.bus.verifierDatabase(t.deps.database), now: () => t.clock().getTime() })
  await verifier.ready()
})
afterAll(() => verifier?.close())

/**
 * What LIVE_TOKEN_SQL was before the view: the tables joined by hand; users by a left join
 * since machine tokens have none (gatehouse_live_tokens_v2, docs/decisions/021-machine-tokens.md).
 */
const JOINED_SQL = `select t.user_id, t.application_id, t.scopes, t.created_at, a.client_id, u.email, t.dpop_jkt, t.expires_at, t.audience
from access_tokens t
join applications a on a.id = t.application_id
left join users u on u.id = t.user_id
where t.token_hash = $1 and t.revoked_at is null`

/**
 * The generic plan of `text` prepared on one connection, as a named prepared statement is
 * planned once its parameters no longer decide (src/db/prepared-pool.ts).
 */
async function genericPlan(text: string): Promise<string> {
  return t.db.connection().execute(async (db) => {
    await sql.raw(`prepare live_token_plan as ${text}`).execute(db)
    try {
      await sql`set plan_cache_mode = force_generic_plan`.execute(db)
      const { rows } = await sql.raw<{ 'QUERY PLAN': string }>(`explain (costs off) execute live_token_plan('x')`).execute(db)
      return rows.map((r) => r['QUERY PLAN']).join('\n')
    } finally {
      await sql`reset plan_cache_mode`.execute(db)
      await sql`deallocate live_token_plan`.execute(db)
    }
  })
}

describe('the views gatehouse_live_tokens_v1 to _v4', () => {
  it('has the columns verifiers read, in their order and types, for good: _v1 to _v3 for earlier verifiers, _v4 for these', async () => {
    const columns = async (view: string) => {
      const { rows } = await sql<{ column_name: string; data_type: string }>`
        select column_name, data_type from information_schema.columns
        where table_schema = 'public' and table_name = ${view} order by ordinal_position`.execute(t.db)
      return rows.map((r) => `${r.column_name} ${r.data_type}`)
    }
    const earlier = [
      'token_hash text',
      'user_id uuid',
      'application_id uuid',
      'scopes ARRAY',
      'created_at timestamp with time zone',
      'client_id text',
      'email text',
    ]
    for (const view of [LIVE_TOKEN_VIEW_V1, LIVE_TOKEN_VIEW_V2]) expect(await columns(view), view).toEqual(earlier)
    const third = [...earlier, 'dpop_jkt text', 'expires_at timestamp with time zone']
    expect(await columns(LIVE_TOKEN_VIEW_V3)).toEqual(third)
    expect(LIVE_TOKEN_VIEW).toBe('gatehouse_live_tokens_v4')
    expect(await columns(LIVE_TOKEN_VIEW)).toEqual([...third, 'audience ARRAY'])
  })

  it('holds in _v1 and _v2 neither bound nor expired tokens, which their verifiers cannot judge; _v3 holds both', async () => {
    const issue = () => createAccessToken(t.db, { userId: user.id, applicationId: app.id })
    const [bound, expired, expiring] = [await issue(), await issue(), await issue()]
    await sql`update access_tokens set dpop_jkt = 'thumbprint' where token_hash = ${bound.digest}`.execute(t.db)
    await sql`update access_tokens set expires_at = now() - interval '1 second' where token_hash = ${expired.digest}`.execute(t.db)
    await sql`update access_tokens set expires_at = now() + interval '1 hour' where token_hash = ${expiring.digest}`.execute(t.db)
    const inView = async (view: string) => {
      const { rows } = await sql.raw<{ token_hash: string }>(`select token_hash from ${view}`).execute(t.db)
      const held = new Set(rows.map((r) => r.token_hash))
      return [bound, expired, expiring].map((x) => held.has(x.digest))
    }
    for (const view of [LIVE_TOKEN_VIEW_V1, LIVE_TOKEN_VIEW_V2]) expect(await inView(view), view).toEqual([false, false, true])
    for (const view of [LIVE_TOKEN_VIEW_V3, LIVE_TOKEN_VIEW]) expect(await inView(view), view).toEqual([true, true, true])
  })

  it('holds in _v1 to _v3 no token with an audience, which their verifiers cannot check (RFC 8707); _v4 holds it', async () => {
    const plain = await createAccessToken(t.db, { userId: user.id, applicationId: app.id })
    const aimed = await createAccessToken(t.db, { userId: user.id, applicationId: app.id, audience: ['https://api.example.com/'] })
    const inView = async (view: string) => {
      const { rows } = await sql.raw<{ token_hash: string }>(`select token_hash from ${view}`).execute(t.db)
      const held = new Set(rows.map((r) => r.token_hash))
      return [plain, aimed].map((x) => held.has(x.digest))
    }
    for (const view of [LIVE_TOKEN_VIEW_V1, LIVE_TOKEN_VIEW_V2, LIVE_TOKEN_VIEW_V3]) expect(await inView(view), view).toEqual([true, false])
    expect(await inView(LIVE_TOKEN_VIEW)).toEqual([true, true])
  })

  it('is inlined: the lookup is planned as the join of the tables it replaced, by the digest index', async () => {
    const throughView = await genericPlan(LIVE_TOKEN_SQL)
    expect(throughView).toBe(await genericPlan(JOINED_SQL))
    expect(throughView).toContain('access_tokens_token_hash_key')
    expect(throughView).not.toMatch(/Subquery Scan|gatehouse_live_tokens_v/)
  })
})

function introspect(token: string) {
  return t.app.inject({
    method: 'POST',
    url: '/oauth/introspect',
    headers: { authorization: basicAuth(rs.clientId, rs.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: `token=${token}`,
  })
}

/** What each reader of the view says of a token none of them has looked up before. */
async function verdicts(token: AccessTokenFixture, otherClient: ApplicationFixture) {
  const info = await t.app.inject({ method: 'GET', url: '/oauth/token/info', headers: { authorization: `Bearer ${token.token}` } })
  const revokedByAnother = await t.app.inject({
    method: 'POST',
    url: '/oauth/revoke',
    headers: {
      authorization: basicAuth(otherClient.clientId, otherClient.clientSecret),
      'content-type': 'application/x-www-form-urlencoded',
    },
    payload: `token=${token.token}`,
  })
  const verified = await verifier.verify(`Bearer ${token.token}`, 'read')
  return {
    introspection: (await introspect(token.token)).json<{ active: boolean }>().active,
    tokenInfo: info.statusCode,
    // RFC 7009 2.1: another client's live token is refused; a dead one succeeds silently (2.2).
    revokeByAnotherClient: revokedByAnother.statusCode,
    verifier: verified.ok,
  }
}

const LIVE = { introspection: true, tokenInfo: 200, revokeByAnotherClient: 400, verifier: true }
const DEAD = { introspection: false, tokenInfo: 401, revokeByAnotherClient: 200, verifier: false }

describe('the server and a database-mode verifier agree on the view', () => {
  it('call a live token active and one revoked in the table, with no notice sent, inactive', async () => {
    const live = await createAccessToken(t.db, { userId: user.id, applicationId: app.id })
    const revoked = await createAccessToken(t.db, { userId: user.id, applicationId: app.id })
    await t.db.updateTable('access_tokens').set({ revoked_at: new Date() }).where('token_hash', '=', revoked.digest).execute()
    expect(await verdicts(live, rs)).toEqual(LIVE)
    expect(await verdicts(revoked, rs)).toEqual(DEAD)
  })

  it('follow a redefinition of the view, as a later migration makes one, with their code unchanged', async () => {
    const { rows } = await sql<{ definition: string }>`select pg_get_viewdef(${LIVE_TOKEN_VIEW}::regclass) as definition`.execute(t.db)
    const definition = rows[0]!.definition.trim().replace(/;$/, '')
    const old = await createAccessToken(t.db, { userId: user.id, applicationId: app.id, now: new Date('2019-06-01T00:00:00Z') })
    const recent = await createAccessToken(t.db, { userId: user.id, applicationId: app.id })
    // Expiry stands in for any later rule: the same columns, fewer rows.
    await sql.raw(`create or replace view ${LIVE_TOKEN_VIEW} as ${definition} and t.created_at >= '2020-01-01'`).execute(t.db)
    try {
      expect(await verdicts(old, rs)).toEqual(DEAD)
      expect(await verdicts(recent, rs)).toEqual(LIVE)
    } finally {
      await sql.raw(`create or replace view ${LIVE_TOKEN_VIEW} as ${definition}`).execute(t.db)
    }
    const restored = await sql<{ definition: string }>`select pg_get_viewdef(${LIVE_TOKEN_VIEW}::regclass) as definition`.execute(t.db)
    expect(restored.rows[0]!.definition.trim().replace(/;$/, '')).toBe(definition)
  })
})
