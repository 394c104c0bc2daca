import { Migrator, sql } from 'kysely'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { migrations } from '../../migrations/index.js'
import type { Db } from '../../src/db/connect.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { type TestDatabase, createUnmigratedDatabase } from '../helpers/db.js'
import { createApplication, createUser } from '../helpers/factories.js'

/*
 * Migrations that change a table holding rows, run step by step from an empty database as an
 * operator's upgrade runs them (both engines). Every other test file starts migrated.
 */

let t: TestDatabase
beforeAll(async () => {
  t = await createUnmigratedDatabase()
})
afterAll(() => t.destroy())

async function migrateTo(db: Db, name: string): Promise<void> {
  const { error } = await new Migrator({ db, provider: { getMigrations: async () => migrations } }).migrateTo(name)
  if (error) throw error
}

/** access_tokens' columns, constraints and indexes, each as one line, sorted (not by column order). */
async function tokenTableShape(db: Db): Promise<string[]> {
  const { rows } = await sql<{ x: string }>`
    select a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || case when a.attnotnull then ' not null' else '' end
           || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '') as x
      from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
      where a.attrelid = 'access_tokens'::regclass and a.attnum > 0 and not a.attisdropped
    union all
    select conname || ' ' || pg_get_constraintdef(oid) from pg_constraint where conrelid = 'access_tokens'::regclass
    union all
    select pg_get_indexdef(indexrelid) || case when indisreplident then ' (replica identity)' else '' end from pg_index where indrelid = 'access_tokens'::regclass
    union all
    select 'replica identity ' || relreplident::text from pg_class where oid = 'access_tokens'::regclass
    order by x`.execute(db)
  return rows.map((r) => r.x)
}

// docs/scaling.md "The token table": the digest's unique constraint is the key, the uuid is gone.
it('0015 drops the uuid of access_tokens and keys its rows by the digest, keeps them, and its down restores the uuid', async () => {
  const db = t.handle.db
  await migrateTo(db, '0014_post_logout_redirect_uris')
  const before = await tokenTableShape(db)
  const user = await createUser(db)
  const application = await createApplication(db)
  const tokenHash = 'a'.repeat(64)
  await sql`insert into access_tokens (token_hash, application_id, user_id, scopes, created_at)
            values (${tokenHash}, ${application.id}::uuid, ${user.id}::uuid, array['read'], now())`.execute(db)

  await migrateToLatest(db)
  const after = await tokenTableShape(db)
  expect(after.filter((x) => x.startsWith('id ') || x.includes('PRIMARY KEY') || x.includes('_pkey'))).toEqual([])
  expect(after.filter((x) => x.includes('(token_hash)') || x.startsWith('replica identity'))).toEqual([
    'CREATE UNIQUE INDEX access_tokens_token_hash_key ON public.access_tokens USING btree (token_hash) (replica identity)',
    'access_tokens_token_hash_key UNIQUE (token_hash)',
    'replica identity i',
  ])
  const kept = await sql<{ user_id: string; scopes: string[] }>`
    select user_id, scopes from access_tokens where token_hash = ${tokenHash}`.execute(db)
  expect(kept.rows).toEqual([{ user_id: user.id, scopes: ['read'] }])

  await migrateTo(db, '0014_post_logout_redirect_uris')
  expect(await tokenTableShape(db)).toEqual(before)
  const restored = await sql<{ n: number }>`
    select count(*)::int as n from access_tokens where token_hash = ${tokenHash} and id is not null`.execute(db)
  expect(restored.rows).toEqual([{ n: 1 }])
})

/** Whether the view of live tokens exists, and which digests it holds. */
async function liveTokenView(db: Db): Promise<string[] | undefined> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_views where viewname = 'gatehouse_live_tokens_v1'`.execute(db)
  if (rows[0]!.n === 0) return undefined
  const live = await sql<{ token_hash: string }>`select token_hash from gatehouse_live_tokens_v1 order by token_hash`.execute(db)
  return live.rows.map((r) => r.token_hash)
}

// docs/decisions/017-live-token-view.md: the one definition of a live token, over rows already there.
it('0017 makes the view of live tokens over the tokens already issued, and its down drops it', async () => {
  const db = t.handle.db
  await migrateTo(db, '0016_totp_failed_codes')
  expect(await liveTokenView(db)).toBeUndefined()
  const user = await createUser(db)
  const application = await createApplication(db)
  const [live, revoked] = ['b'.repeat(64), 'c'.repeat(64)]
  await sql`insert into access_tokens (token_hash, application_id, user_id, scopes, created_at, revoked_at)
            values (${live}, ${application.id}::uuid, ${user.id}::uuid, array['read'], now(), null),
                   (${revoked}, ${application.id}::uuid, ${user.id}::uuid, array['read'], now(), now())`.execute(db)

  await migrateToLatest(db)
  const holds = await liveTokenView(db)
  expect(holds).toContain(live)
  expect(holds).not.toContain(revoked)

  await migrateTo(db, '0016_totp_failed_codes')
  expect(await liveTokenView(db)).toBeUndefined()
  await migrateToLatest(db)
  expect(await liveTokenView(db)).toContain(live)
})

// docs/decisions/021-machine-tokens.md: machine tokens have no user; _v1 keeps its contract, _v2 holds them.
it('0021 lets a token have no user, shows it in _v2 but not in _v1, and its down removes such tokens', async () => {
  const db = t.handle.db
  await migrateToLatest(db)
  const user = await createUser(db)
  const application = await createApplication(db, { kind: 'machine', clientCredentialsScopes: ['read'] })
  const [forUser, forMachine] = ['d'.repeat(64), 'e'.repeat(64)]
  await sql`insert into access_tokens (token_hash, application_id, user_id, scopes, created_at)
            values (${forUser}, ${application.id}::uuid, ${user.id}::uuid, array['read'], now()),
                   (${forMachine}, ${application.id}::uuid, null, array['read'], now())`.execute(db)
  const inView = async (view: string) =>
    (
      await sql
        .raw<{ token_hash: string }>(
          `select token_hash from ${view} where token_hash in ('${forUser}', '${forMachine}') order by token_hash`,
        )
        .execute(db)
    ).rows.map((r) => r.token_hash)
  expect(await inView('gatehouse_live_tokens_v1')).toEqual([forUser])
  expect(await inView('gatehouse_live_tokens_v2')).toEqual([forUser, forMachine])
  // A token exchanged for a code always has its user.
  await expect(
    sql`update access_tokens set authorization_code_id = gen_random_uuid() where token_hash = ${forMachine}`.execute(db),
  ).rejects.toThrow(/access_tokens_machine_without_code/)

  await migrateTo(db, '0018_application_kinds')
  expect(await inView('gatehouse_live_tokens_v1')).toEqual([forUser])
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from access_tokens where user_id is null`.execute(db)
  expect(rows).toEqual([{ n: 0 }])
  await migrateToLatest(db)
})

it('0022 adds the lifetimes, the families, refresh tokens and the v3 view; v1 and v2 drop expired and bound tokens; its down removes them', async () => {
  const db = t.handle.db
  await migrateToLatest(db)
  const user = await createUser(db)
  const application = await createApplication(db)
  await sql`update applications set access_token_ttl_seconds = 3600, refresh_token_ttl_seconds = 86400 where id = ${application.id}::uuid`.execute(
    db,
  )
  // The refresh lifetime longer than the access one.
  await expect(
    sql`update applications set refresh_token_ttl_seconds = 3600, access_token_ttl_seconds = 7200 where id = ${application.id}::uuid`.execute(
      db,
    ),
  ).rejects.toThrow(/applications_token_lifetimes/)
  const family = await sql<{ id: string }>`
    insert into refresh_token_families (application_id, user_id, scopes, access_token_ttl_seconds, refresh_token_ttl_seconds, created_at, expires_at)
    values (${application.id}::uuid, ${user.id}::uuid, array['read'], 3600, 86400, now(), now() + interval '1 year') returning id`.execute(
    db,
  )
  const familyId = family.rows[0]!.id
  await sql`insert into refresh_tokens (token_hash, family_id, created_at, expires_at) values (${'f'.repeat(64)}, ${familyId}::uuid, now(), now() + interval '1 day')`.execute(
    db,
  )
  const [live, expired] = ['1'.repeat(64), '2'.repeat(64)]
  await sql`insert into access_tokens (token_hash, application_id, user_id, scopes, created_at, expires_at, refresh_family_id)
            values (${live}, ${application.id}::uuid, ${user.id}::uuid, array['read'], now(), now() + interval '1 hour', ${familyId}::uuid),
                   (${expired}, ${application.id}::uuid, ${user.id}::uuid, array['read'], now() - interval '2 hours', now() - interval '1 hour', ${familyId}::uuid)`.execute(
    db,
  )
  const inView = async (view: string) =>
    (
      await sql
        .raw<{ token_hash: string }>(`select token_hash from ${view} where token_hash in ('${live}', '${expired}') order by token_hash`)
        .execute(db)
    ).rows.map((r) => r.token_hash)
  // v3 holds both and says when each expires (a verifier judges by its own clock); v1 and v2 only the unexpired one.
  expect(await inView('gatehouse_live_tokens_v3')).toEqual([live, expired])
  expect(await inView('gatehouse_live_tokens_v2')).toEqual([live])
  expect(await inView('gatehouse_live_tokens_v1')).toEqual([live])

  await migrateTo(db, '0021_machine_tokens')
  const tables = await sql<{
    n: string
  }>`select tablename as n from pg_tables where tablename in ('refresh_tokens', 'refresh_token_families', 'dpop_proof_jtis')`.execute(db)
  expect(tables.rows).toEqual([])
  const columns = await sql<{ n: string }>`
    select column_name as n from information_schema.columns
    where (table_name = 'applications' and column_name in ('require_dpop', 'access_token_ttl_seconds', 'refresh_token_ttl_seconds'))
       or (table_name = 'access_tokens' and column_name in ('dpop_jkt', 'expires_at', 'refresh_family_id'))`.execute(db)
  expect(columns.rows).toEqual([])
  const views = await sql<{ n: string }>`select viewname as n from pg_views where viewname = 'gatehouse_live_tokens_v3'`.execute(db)
  expect(views.rows).toEqual([])
  // The expiring tokens went with the columns that said so; none is left to live for ever.
  expect(await inView('gatehouse_live_tokens_v2')).toEqual([])
  await migrateToLatest(db)
})

it('0024 lets an audit event area hold an underscore, and its down removes such events', async () => {
  const db = t.handle.db
  await migrateToLatest(db)
  await sql`insert into audit_events (event, occurred_at) values ('refresh_token.reused', now())`.execute(db)
  await migrateTo(db, '0022_bound_and_expiring_tokens')
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from audit_events where event = 'refresh_token.reused'`.execute(db)
  expect(rows).toEqual([{ n: 0 }])
  await expect(sql`insert into audit_events (event, occurred_at) values ('refresh_token.reused', now())`.execute(db)).rejects.toThrow(
    /audit_events_event_format/,
  )
  await migrateToLatest(db)
})

it('0025 adds resource identifiers, audiences and the v4 view; v1 to v3 leave out tokens with an audience; its down removes them', async () => {
  const db = t.handle.db
  await migrateToLatest(db)
  const user = await createUser(db)
  const application = await createApplication(db, { resourceServer: true })
  await sql`insert into resource_identifiers (identifier, application_id, created_at) values ('https://api.example.com/', ${application.id}::uuid, now())`.execute(
    db,
  )
  // An identifier names one API: a second application cannot declare it.
  const other = await createApplication(db, { resourceServer: true })
  await expect(
    sql`insert into resource_identifiers (identifier, application_id, created_at) values ('https://api.example.com/', ${other.id}::uuid, now())`.execute(
      db,
    ),
  ).rejects.toThrow(/resource_identifiers_pkey/)
  await expect(sql`update applications set resource_token_ttl_seconds = 0 where id = ${application.id}::uuid`.execute(db)).rejects.toThrow(
    /applications_resource_token_ttl/,
  )
  const [plain, aimed] = ['7'.repeat(64), '8'.repeat(64)]
  await sql`insert into access_tokens (token_hash, application_id, user_id, scopes, created_at, expires_at, audience)
            values (${plain}, ${application.id}::uuid, ${user.id}::uuid, array['read'], now(), null, null),
                   (${aimed}, ${application.id}::uuid, ${user.id}::uuid, array['read'], now(), now() + interval '1 hour',
                    array['https://api.example.com/'])`.execute(db)
  const inView = async (view: string) =>
    (
      await sql
        .raw<{ token_hash: string }>(`select token_hash from ${view} where token_hash in ('${plain}', '${aimed}') order by token_hash`)
        .execute(db)
    ).rows.map((r) => r.token_hash)
  expect(await inView('gatehouse_live_tokens_v4')).toEqual([plain, aimed])
  for (const view of ['gatehouse_live_tokens_v3', 'gatehouse_live_tokens_v2', 'gatehouse_live_tokens_v1']) {
    expect(await inView(view), view).toEqual([plain])
  }

  await migrateTo(db, '0024_audit_event_areas')
  const tables = await sql<{ n: string }>`select tablename as n from pg_tables where tablename = 'resource_identifiers'`.execute(db)
  expect(tables.rows).toEqual([])
  const columns = await sql<{ n: string }>`
    select table_name || '.' || column_name as n from information_schema.columns
    where column_name in ('audience', 'resources', 'resource_token_ttl_seconds')`.execute(db)
  expect(columns.rows).toEqual([])
  // The token for one API went with the column that said so; the other is live everywhere as before.
  expect(await inView('gatehouse_live_tokens_v3')).toEqual([plain])
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from access_tokens where token_hash = ${aimed}`.execute(db)
  expect(rows).toEqual([{ n: 0 }])
  await migrateToLatest(db)
})

it('0026 lets a metadata document client have no owner, only as a public client, and its down removes such clients', async () => {
  const db = t.handle.db
  await migrateToLatest(db)
  const owner = await createUser(db)
  const owned = await createApplication(db, { ownerId: owner.id })
  const insert = (clientId: string, kind: string, fetched: boolean) =>
    sql`insert into applications (client_id, kind, secret_hash, owner_id, name, redirect_uris, allowed_scopes, require_pkce, created_at, updated_at, metadata_fetched_at)
        values (${clientId}, ${kind}, ${kind === 'native' ? null : 'digest'}, null, 'Bot', '{https://c.example/cb}', '{read}', true, now(), now(),
                ${fetched ? sql`now()` : sql`null`})`.execute(db)
  await insert('https://c.example/client.json', 'native', true)
  // No owner without a document, and a document's client is never a confidential one.
  await expect(insert('https://d.example/client.json', 'native', false)).rejects.toThrow(/applications_metadata_clients_have_no_owner/)
  await expect(insert('https://e.example/client.json', 'web', true)).rejects.toThrow(/applications_metadata_clients_have_no_owner/)
  await migrateTo(db, '0024_audit_event_areas')
  const { rows } = await sql<{ id: string }>`select id from applications where client_id like 'https://%' or id = ${owned.id}`.execute(db)
  expect(rows.map((r) => r.id)).toEqual([owned.id])
  await migrateToLatest(db)
})

it('0027 records the resources a grant covers, null for the grants before it; its down removes the column', async () => {
  const db = t.handle.db
  await migrateToLatest(db)
  const user = await createUser(db)
  const application = await createApplication(db)
  await sql`insert into grants (user_id, application_id, scopes, created_at, updated_at)
            values (${user.id}::uuid, ${application.id}::uuid, array['read'], now(), now())`.execute(db)
  const resources = () => sql<{ resources: string[] | null }>`select resources from grants where user_id = ${user.id}::uuid`.execute(db)
  expect((await resources()).rows).toEqual([{ resources: null }])
  await sql`update grants set resources = array['https://api.example.com/'] where user_id = ${user.id}::uuid`.execute(db)
  await migrateTo(db, '0026_client_metadata_documents')
  const columns = await sql<{ n: string }>`
    select column_name as n from information_schema.columns where table_name = 'grants' and column_name = 'resources'`.execute(db)
  expect(columns.rows).toEqual([])
  await migrateToLatest(db)
  expect((await resources()).rows).toEqual([{ resources: null }])
})
