import { CompiledQuery, sql } from 'kysely'
import type { Db } from '../db/connect.js'
import type { Application, AuthorizationCode } from '../db/schema.js'

export interface NewCode {
  codeHash: string
  applicationId: string
  userId: string
  scopes: string[]
  redirectUri: string | null
  codeChallenge: string | null
  codeChallengeMethod: 'S256' | 'plain' | null
  now: Date
  expiresAt: Date
  /** What the ID Token of the exchange states; null without `openid`. */
  identity: CodeIdentity | null
  /** RFC 9449 §10: the key `dpop_jkt` bound the code to, or null. */
  dpopJkt?: string | null
  /** RFC 8707: the resources the authorization is for, sorted and distinct; null without `resource`. */
  resources?: string[] | null
}

/** OpenID Connect Core 3.1.3.6: what an ID Token issued for the code states of its request and session. */
export interface CodeIdentity {
  nonce: string | null
  authTime: Date | null
  amr: string[] | null
  sid: string | null
}

export async function insertAuthorizationCode(db: Db, c: NewCode): Promise<void> {
  await db
    .insertInto('authorization_codes')
    .values({
      code_hash: c.codeHash,
      application_id: c.applicationId,
      user_id: c.userId,
      scopes: c.scopes,
      redirect_uri: c.redirectUri,
      code_challenge: c.codeChallenge,
      code_challenge_method: c.codeChallengeMethod,
      created_at: c.now,
      expires_at: c.expiresAt,
      nonce: c.identity?.nonce ?? null,
      auth_time: c.identity?.authTime ?? null,
      amr: c.identity?.amr ?? null,
      sid: c.identity?.sid ?? null,
      dpop_jkt: c.dpopJkt ?? null,
      resources: c.resources ?? null,
    })
    .execute()
}

/**
 * The application columns the code-flow checks of an authorization request read
 * (src/oauth/authorize/authorize-request.ts). A code issued under remembered consent is inserted only
 * while the application still has the values the request was validated against, so the
 * request may be validated against a cached copy. This list is the one definition of "the
 * settings are unchanged": the statement below compares these columns, and
 * `sameCodeFlowSettings` (src/oauth/authorize/authorize.ts) compares the same ones in TypeScript.
 */
export const CODE_FLOW_SETTINGS = ['id', 'client_id', 'redirect_uris', 'allowed_scopes', 'require_pkce', 'require_pushed_requests'] as const
export type CodeFlowSettings = Pick<Application, (typeof CODE_FLOW_SETTINGS)[number]>

const SETTING_TYPES: Record<(typeof CODE_FLOW_SETTINGS)[number], string> = {
  id: 'uuid',
  client_id: 'text',
  redirect_uris: 'text[]',
  allowed_scopes: 'text[]',
  require_pkce: 'boolean',
  require_pushed_requests: 'boolean',
}

const LIMIT_PARAM = `$${9 + CODE_FLOW_SETTINGS.length}::int`
const WINDOW_MS_PARAM = `$${10 + CODE_FLOW_SETTINGS.length}::int`
/** The ID Token's nonce, auth_time, amr and sid, after the window (null without `openid`). */
const IDENTITY_PARAMS = [0, 1, 2, 3].map((i) => `$${11 + CODE_FLOW_SETTINGS.length + i}`)
/** The session's digest and the user's values the request was answered with (SessionCheck), after the identity. */
const SESSION_PARAMS = [0, 1, 2, 3].map((i) => `$${15 + CODE_FLOW_SETTINGS.length + i}`)
/** RFC 9449 §10: the key the code is bound to (`dpop_jkt`), null for most, after the session's. */
const DPOP_JKT_PARAM = `$${19 + CODE_FLOW_SETTINGS.length}::text`
/** RFC 8707: the resources, last, in the statement's shape for a request that names them only. */
const RESOURCES_PARAM = `$${20 + CODE_FLOW_SETTINGS.length}::text[]`

/**
 * The browser session a code is issued under, as the authorize request read it: its stored
 * digest, and the user's values the answer depends on (the second-factor policy's, and what the
 * page shows). The statement issues only while the session is live with these values, so the
 * session may come from this process's cache (src/accounts/sessions/session-cache.ts).
 */
export interface SessionCheck {
  readonly sessionKey: string
  readonly email: string
  readonly is_operator: boolean
  readonly secondFactor: boolean
}

// Written out rather than built with Kysely: on this hot path, building and compiling the
// query on every request cost more than the rest of Gatehouse's own work (docs/scaling.md
// "The write paths' real ceilings").
// `order by created_at desc` changes no count: only authorization_codes_user_application_created_idx
// yields that order, so the prepared statement's generic plan cannot pick the application's
// index instead. While the table's statistics are younger than its rows (a fresh database, or
// before autovacuum's first ANALYZE) the two tie on cost, and the application's index reads
// every code the application was issued in the window, several times the buffers per request
// (docs/decisions/007-one-statement-hot-paths.md). Exported for the test that
// pins that plan (test/postgres/code-quota-plan.test.ts).
const codeUnderGrantStatement = (withResources: boolean) => `
with session_live as (
  select exists (
    select 1 from sessions s join users su on su.id = s.user_id
    where s.id_hash = ${SESSION_PARAMS[0]}::text and s.user_id = $2::uuid and s.expires_at > $7::timestamptz
      and su.suspended_at is null and su.email = ${SESSION_PARAMS[1]}::text and su.is_operator = ${SESSION_PARAMS[2]}::boolean
      and su.second_factor = ${SESSION_PARAMS[3]}::boolean
  ) as live
), recent as (
  select count(*) as n from (
    select 1 from authorization_codes
    where user_id = $2::uuid and application_id = $9::uuid and created_at > $7::timestamptz - ${WINDOW_MS_PARAM} * interval '1 millisecond'
    order by created_at desc
    limit ${LIMIT_PARAM}
  ) as r
), issued as (
  insert into authorization_codes
    (code_hash, application_id, user_id, scopes, redirect_uri, code_challenge, code_challenge_method, created_at, expires_at,
     nonce, auth_time, amr, sid, dpop_jkt${withResources ? ', resources' : ''})
  select $1::text, g.application_id, g.user_id, $3::text[], $4::text, $5::text, $6::text, $7::timestamptz, $8::timestamptz,
    ${IDENTITY_PARAMS[0]}::text, ${IDENTITY_PARAMS[1]}::timestamptz, ${IDENTITY_PARAMS[2]}::text[], ${IDENTITY_PARAMS[3]}::text,
    ${DPOP_JKT_PARAM}${withResources ? `, ${RESOURCES_PARAM}` : ''}
  from grants g
  join applications a on a.id = g.application_id
  join users u on u.id = g.user_id
  where g.user_id = $2::uuid and g.scopes @> $3::text[]
    and ${withResources ? `(g.resources is null or g.resources @> ${RESOURCES_PARAM})` : 'g.resources is null'}
    and ${CODE_FLOW_SETTINGS.map((column, i) => `a.${column} = $${9 + i}::${SETTING_TYPES[column]}`).join(' and ')}
    and a.suspended_at is null
    and u.suspended_at is null
    and (select n from recent) < ${LIMIT_PARAM}
    and (select live from session_live)
  for key share of g, u
  returning id
)
select exists (select 1 from issued) as issued, (select n from recent) >= ${LIMIT_PARAM} as over_quota,
  (select live from session_live) as session_live`

export const INSERT_CODE_UNDER_GRANT = codeUnderGrantStatement(false)
/**
 * The same for a request that names resources (RFC 8707): one more parameter, so the statement
 * of every other request is unchanged. Standing consent covers it when the user approved these
 * APIs, or every API (grants.resources null); a request without resource is covered only by the
 * latter, since its token is for every API (docs/decisions/025-audiences.md).
 */
export const INSERT_CODE_UNDER_GRANT_WITH_RESOURCES = codeUnderGrantStatement(true)

/** 'session-changed': the session ended, or the user's checked values changed, since it was read. */
export type CodeUnderGrant = 'issued' | 'no-grant' | 'over-quota' | 'session-changed'

/**
 * Remembered consent in one statement (one round trip, no transaction): inserts the code only
 * while the session is live and the user's values are `session`'s (so the session may have been
 * read from a cache; sessions_pkey), if the user's grant for the application covers the scopes and the
 * resources (RFC 8707: a grant for some APIs never covers a request for all; grants_user_application_key),
 * the application's settings are still `app`'s, and fewer than `codesPerMinute` codes went to
 * this (user, application) in the last `windowMs` (authorization_codes_user_application_created_idx;
 * the window is QUOTAS.codesPerGrant of src/limits/policy.ts). 'no-grant' means "no such grant, or the application changed or
 * went": the caller falls back to a fresh read and the consent page; 'session-changed' means the
 * session is no longer as `session` says, and the caller reads it again.
 * FOR KEY SHARE on the grant: "Revoke access" deletes the grant before the pending codes, so
 * it either waits for this code and then deletes it, or makes this statement find no grant.
 * FOR KEY SHARE on the user (users_pkey): suspendUser locks the row FOR UPDATE before it
 * deletes the user's pending codes, so a request whose session was read before the suspension
 * either issues its code first (then deleted by the suspension) or waits and, the row re-read
 * once the suspension commits, issues nothing.
 */
export async function insertCodeUnderGrant(
  db: Db,
  c: Omit<NewCode, 'id' | 'applicationId'>,
  app: CodeFlowSettings,
  session: SessionCheck,
  codesPerMinute: number,
  windowMs: number,
): Promise<CodeUnderGrant> {
  const resources = c.resources ?? null
  const result = await db.executeQuery<{ issued: boolean; over_quota: boolean; session_live: boolean }>(
    CompiledQuery.raw(resources === null ? INSERT_CODE_UNDER_GRANT : INSERT_CODE_UNDER_GRANT_WITH_RESOURCES, [
      c.codeHash,
      c.userId,
      c.scopes,
      c.redirectUri,
      c.codeChallenge,
      c.codeChallengeMethod,
      c.now,
      c.expiresAt,
      ...CODE_FLOW_SETTINGS.map((column) => app[column]),
      codesPerMinute,
      windowMs,
      c.identity?.nonce ?? null,
      c.identity?.authTime ?? null,
      c.identity?.amr ?? null,
      c.identity?.sid ?? null,
      session.sessionKey,
      session.email,
      session.is_operator,
      session.secondFactor,
      c.dpopJkt ?? null,
      ...(resources === null ? [] : [resources]),
    ]),
  )
  const row = result.rows[0]
  if (row?.issued) return 'issued'
  if (!row?.session_live) return 'session-changed'
  return row.over_quota ? 'over-quota' : 'no-grant'
}

/** Codes issued to (user, application) since `since`, counted up to `limit` (the same index). */
export async function countRecentCodes(
  db: Db,
  where: { userId: string; applicationId: string; since: Date },
  limit: number,
): Promise<number> {
  const r = await sql<{ n: number }>`select count(*)::int as n from (
      select 1 from authorization_codes
      where user_id = ${where.userId} and application_id = ${where.applicationId} and created_at > ${where.since}
      limit ${limit}
    ) as r`.execute(db)
  return r.rows[0]?.n ?? 0
}

/** By digest (authorization_codes_code_hash_key): the slow path that explains a failed exchange. */
export function findCodeByHash(db: Db, codeHash: string): Promise<AuthorizationCode | undefined> {
  return db.selectFrom('authorization_codes').selectAll().where('code_hash', '=', codeHash).executeTakeFirst()
}

/** Forgets codes not yet exchanged, so "Revoke access" cannot be undone by a pending code. */
export async function deletePendingCodes(db: Db, where: { applicationId?: string; userId?: string }): Promise<void> {
  if (where.applicationId === undefined && where.userId === undefined) throw new Error('deletePendingCodes: no selector')
  let q = db.deleteFrom('authorization_codes').where('consumed_at', 'is', null)
  if (where.applicationId) q = q.where('application_id', '=', where.applicationId)
  if (where.userId) q = q.where('user_id', '=', where.userId)
  await q.execute()
}
