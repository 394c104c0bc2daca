import type { SigningAlg } from '../src/db/schema.js'
import type { LoadSpec } from './load.js'
import type { SeedInfo } from './seed.js'
import { GROWTH_BESIDE, type GrowthCase } from './stats.js'

/*
 * Every row of the benchmark as a small declarative entry: which server, which request,
 * where its per-request items come from, and what a correct answer looks like. `{item}` in the
 * path, a header or the body is replaced per request by the next item of the case's pool.
 */

export type ServerKind = 'baseline' | 'gatehouse' | 'growth'

export type PoolRef =
  /** Fresh live access tokens, each sent once; `openid`: granted the identity scopes (UserInfo). */
  | { kind: 'fresh-tokens'; minBatch: number; openid?: true }
  /** Fresh authorization codes, each sent once; `openid`: granted `openid` by the application signing with that algorithm. */
  | { kind: 'fresh-codes'; minBatch: number; openid?: SigningAlg }
  /** Fresh pending device codes of the device application (RFC 8628), each polled once. */
  | { kind: 'fresh-device-codes'; minBatch: number }
  /** Fresh refresh tokens of the refresh application, each the first of a family of its own, each sent once. */
  | { kind: 'fresh-refresh-tokens'; minBatch: number }
  /** A few tokens sent again and again (the cached path); `openid`: granted the identity scopes. */
  | { kind: 'cached-tokens'; openid?: true }
  /** The known tokens of the growth phases, cycled (the growth server has no cache). */
  | { kind: 'growth-tokens' }
  /**
   * Session cookies of REMEMBERED_USERS users who have granted `read`, cycled; `again`: in
   * blocks that come back within seconds (rememberedAgain), so most requests find the session
   * in Gatehouse's session cache.
   */
  | { kind: 'remembered-sessions'; again?: boolean }

export interface BenchCase {
  id: string
  title: string
  server: ServerKind
  method: 'GET' | 'POST'
  path: string
  headers?: Record<string, string>
  body?: string
  pool?: PoolRef
  /** Statuses that count as a correct answer; anything else makes the row not a measurement. */
  expect: number[]
  check?: LoadSpec['check']
  /** After each measured run (growth phases keep their table size). */
  afterRun?: 'remove-exchanged'
  /**
   * The warm-up sends at least one full pass over the case's fixed pool, so that every item's
   * pages are in PostgreSQL's buffers before anything is measured (docs/scaling.md, "Growth").
   */
  warmupOverPool?: boolean
}

/**
 * The session cookie's name, as a browser sees it (docs/applications.md "Console"): the benchmark's servers
 * listen on http, so it has no `__Host-` prefix. Taken from the documentation rather than from
 * the server's modules, so that the rows send what any client would.
 */
export const SESSION_COOKIE = 'gatehouse_session'

const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
/** RFC 8628 §3.4's grant type, as the specification spells it (a client does not import the server's). */
const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'
const enc = encodeURIComponent

/** The cache-miss pool of the benchmark: at least 100,000 distinct tokens (shared by every fresh-token row). */
export const MISS_POOL_MIN = 100_000

/**
 * Users whose sessions authorize-remembered cycles through (docs/operating/limits.md): authorize under remembered consent refuses after CODE_ISSUE_LIMIT (60) codes a
 * minute per (user, application). At rate r req/s each user gets r × 60 / REMEMBERED_USERS codes
 * a minute: 6 at 5,000 req/s, so the row measures issuing codes, not refusing them.
 */
export const REMEMBERED_USERS = 50_000

/**
 * The order of authorize-remembered's sessions (docs/performance.md): blocks of REMEMBERED_BLOCK sessions,
 * each block sent REMEMBERED_REPEATS times over before the next, so a session comes back after
 * a thousand requests (well within SESSION_CACHE_TTL_MS, and never while its last request is
 * still in flight) and 7 of its 8 requests find it in the session cache, as a browser does that
 * signs in to a second application or renews silently within the minute. Each user still gets
 * REMEMBERED_REPEATS codes per lap of all the sessions, far below CODE_ISSUE_LIMIT.
 */
export const REMEMBERED_BLOCK = 1_000
export const REMEMBERED_REPEATS = 8

export function rememberedAgain(sessions: readonly string[]): string[] {
  const order: string[] = []
  for (let start = 0; start < sessions.length; start += REMEMBERED_BLOCK) {
    const block = sessions.slice(start, start + REMEMBERED_BLOCK)
    for (let pass = 0; pass < REMEMBERED_REPEATS; pass++) order.push(...block)
  }
  return order
}

/** K's request, which M sends to A's unguarded route: a cached token as the bearer, the answer checked. */
const guardedRequest = {
  server: 'baseline',
  method: 'GET',
  headers: { authorization: 'Bearer {item}' },
  pool: { kind: 'cached-tokens' },
  expect: [200],
  check: { bodyIncludes: '"status":"ok"' },
} as const satisfies Omit<BenchCase, 'id' | 'title' | 'path'>

/**
 * A–D, and M and K: K is A's route behind the verifier, M A's route sent K's request, so that
 * K over M is what the guard alone costs. They run beside A in each round (mainPhaseGroups).
 */
export const BASELINE_CASES: readonly BenchCase[] = [
  { id: 'baseline-a', title: 'A: bare Fastify, small JSON', server: 'baseline', method: 'GET', path: '/a', expect: [200] },
  { id: 'baseline-m', title: "M: A's route, sent K's request (a bearer token it does not read)", path: '/a', ...guardedRequest },
  {
    id: 'baseline-k',
    title: "K: A's route behind the in-process verifier (@gatehouse/verifier's Fastify plugin)",
    path: '/k',
    ...guardedRequest,
  },
  { id: 'baseline-b', title: 'B: bare Fastify, SELECT by PK (pg)', server: 'baseline', method: 'GET', path: '/b', expect: [200] },
  {
    id: 'baseline-c',
    title: 'C: bare Fastify, one INSERT (pg)',
    server: 'baseline',
    method: 'POST',
    path: '/c',
    headers: { 'content-type': 'application/json' },
    body: '{"v":1}',
    expect: [200],
  },
  {
    id: 'baseline-d',
    title: 'D: bare Fastify, INSERT + NOTIFY in one transaction (pg)',
    server: 'baseline',
    method: 'POST',
    path: '/d',
    headers: { 'content-type': 'application/json' },
    body: '{"v":1}',
    expect: [200],
  },
]

/** J's request, which O sends with the token info miss's fresh tokens. */
const tokenInfoWork = {
  server: 'baseline',
  method: 'GET',
  path: '/j',
  headers: { authorization: 'Bearer {item}' },
  expect: [200],
} as const satisfies Omit<BenchCase, 'id' | 'title'>

/** I's, Q's, N's and R's request: the introspection's form, as the Gatehouse rows send it. */
function introspectionWorkOf(seed: SeedInfo) {
  return {
    server: 'baseline',
    method: 'POST',
    path: '/i',
    headers: FORM,
    body: `token={item}&client_id=${enc(seed.clientId)}&client_secret=${enc(seed.clientSecret)}`,
    expect: [200],
    check: { bodyIncludes: '"active":true' },
  } as const satisfies Omit<BenchCase, 'id' | 'title'>
}

/**
 * Baselines E–H and P (bench/statement-routes.ts): the statements of the code exchange,
 * remembered consent and revocation (P: with its notice heard), from bare Fastify, with the same
 * pools as the Gatehouse rows. I, J and L (bench/cached-routes.ts): the cached answers' own
 * work; N: I's route sent the introspection miss's fresh tokens, its own work with the database
 * lookup; O: J's route sent the token info miss's fresh tokens, the same for token info.
 */
export function statementCases(seed: SeedInfo, freshBatch: number): BenchCase[] {
  const client = `"client_id":${JSON.stringify(seed.clientId)},"client_secret":${JSON.stringify(seed.clientSecret)}`
  const json = { 'content-type': 'application/json' }
  const introspectionWork = introspectionWorkOf(seed)
  return [
    {
      id: 'baseline-e',
      title: "E: bare Fastify, the code exchange's statement",
      server: 'baseline',
      method: 'POST',
      path: '/e',
      headers: json,
      body: `{"code":"{item}","redirect_uri":${JSON.stringify(seed.redirectUri)},${client}}`,
      pool: { kind: 'fresh-codes', minBatch: freshBatch },
      expect: [200],
      check: { bodyIncludes: '"access_token"' },
    },
    {
      id: 'baseline-f',
      title: "F: bare Fastify, remembered consent's two statements",
      server: 'baseline',
      method: 'GET',
      path: `/f?client_id=${enc(seed.clientId)}&redirect_uri=${enc(seed.redirectUri)}&state=bench`,
      headers: { cookie: `${SESSION_COOKIE}={item}` },
      pool: { kind: 'remembered-sessions' },
      expect: [302],
      check: { header: { name: 'location', includes: 'code=' } },
    },
    {
      id: 'baseline-h',
      title: "H: bare Fastify, remembered consent's statement, sessions cached",
      server: 'baseline',
      method: 'GET',
      path: `/h?client_id=${enc(seed.clientId)}&redirect_uri=${enc(seed.redirectUri)}&state=bench`,
      headers: { cookie: `${SESSION_COOKIE}={item}` },
      pool: { kind: 'remembered-sessions', again: true },
      expect: [302],
      check: { header: { name: 'location', includes: 'code=' } },
    },
    { id: 'baseline-i', title: "I: bare Fastify, cached introspection's own work", ...introspectionWork, pool: { kind: 'cached-tokens' } },
    {
      id: 'baseline-q',
      title: "Q: I's work, with every header of Gatehouse's answer (request id, nosniff, no-store, no-cache)",
      ...introspectionWork,
      path: '/q',
      pool: { kind: 'cached-tokens' },
      check: { bodyIncludes: '"active":true', header: { name: 'x-content-type-options', includes: 'nosniff' } },
    },
    {
      id: 'baseline-n',
      title: "N: bare Fastify, the introspection miss's own work (I's route, a fresh token each)",
      ...introspectionWork,
      pool: { kind: 'fresh-tokens', minBatch: MISS_POOL_MIN },
    },
    {
      id: 'baseline-o',
      title: "O: bare Fastify, the token info miss's own work (J's route, a fresh token each)",
      ...tokenInfoWork,
      pool: { kind: 'fresh-tokens', minBatch: MISS_POOL_MIN },
    },
    { id: 'baseline-j', title: "J: bare Fastify, cached token info's own work", ...tokenInfoWork, pool: { kind: 'cached-tokens' } },
    {
      id: 'baseline-l',
      title: "L: J's work, with every header of Gatehouse's answer (request id, nosniff, no-store, no-cache)",
      server: 'baseline',
      method: 'GET',
      path: '/l',
      headers: { authorization: 'Bearer {item}' },
      pool: { kind: 'cached-tokens' },
      expect: [200],
      check: { header: { name: 'x-content-type-options', includes: 'nosniff' } },
    },
    // G's and P's request: the revocation's, as JSON, with the revoke row's fresh tokens.
    ...[
      { id: 'baseline-g', title: "G: bare Fastify, the revocation's statement (NOTIFY, no listener)", path: '/g' },
      { id: 'baseline-p', title: "P: G's statement on a channel its own process listens to, each notice heard and decoded", path: '/p' },
    ].map((row): BenchCase => ({
      ...row,
      server: 'baseline',
      method: 'POST',
      headers: json,
      body: `{"token":"{item}",${client}}`,
      pool: { kind: 'fresh-tokens', minBatch: MISS_POOL_MIN },
      expect: [200],
    })),
  ]
}

/** The ID Token signing algorithms an application may choose, each a row of its own (docs/performance.md). */
const OPENID_ROWS: readonly { alg: SigningAlg; suffix: string }[] = [
  { alg: 'RS256', suffix: 'rs256' },
  { alg: 'ES256', suffix: 'es256' },
  { alg: 'EdDSA', suffix: 'eddsa' },
]

/**
 * The OpenID Connect rows of docs/performance.md: the code exchange of an application that signs ID Tokens with `alg`, its codes
 * granted `openid email profile`, so the answer carries a signed ID Token beside the access
 * token. Set against `code-exchange` of the same run (bench/stats.ts COMPARISONS), the difference
 * is what `openid` costs: the user's claims read in the same statement, and the signature.
 */
function openidExchangeCases(seed: SeedInfo, freshBatch: number): BenchCase[] {
  return OPENID_ROWS.map(({ alg, suffix }) => {
    const app = seed.openid[alg]
    return {
      id: `code-exchange-openid-${suffix}`,
      title: `POST /oauth/token, fresh openid code each, ID Token ${alg}`,
      server: 'gatehouse',
      method: 'POST',
      path: '/oauth/token',
      headers: FORM,
      body:
        `grant_type=authorization_code&code={item}&redirect_uri=${enc(seed.redirectUri)}` +
        `&client_id=${enc(app.clientId)}&client_secret=${enc(app.clientSecret)}`,
      pool: { kind: 'fresh-codes', minBatch: freshBatch, openid: alg },
      expect: [200],
      check: { bodyIncludes: '"id_token"' },
    }
  })
}

/**
 * The OpenID Connect rows of docs/performance.md: UserInfo (OpenID Connect Core 5.3) with tokens granted the identity scopes, cached
 * and not, as introspection and token info are: the same few tokens again and again (the token
 * cache answers; the user's claims are still read), or a fresh token each (a database lookup).
 */
function userInfoCases(): BenchCase[] {
  const userInfo = { method: 'GET', path: '/oauth/userinfo', headers: { authorization: 'Bearer {item}' } } as const
  return [
    {
      id: 'userinfo-cached',
      title: 'GET /oauth/userinfo, same few tokens',
      server: 'gatehouse',
      ...userInfo,
      pool: { kind: 'cached-tokens', openid: true },
      expect: [200],
      check: { bodyIncludes: '"email"' },
    },
    {
      id: 'userinfo-miss',
      title: 'GET /oauth/userinfo, fresh token each',
      server: 'gatehouse',
      ...userInfo,
      pool: { kind: 'fresh-tokens', minBatch: MISS_POOL_MIN, openid: true },
      expect: [200],
      check: { bodyIncludes: '"email"' },
    },
  ]
}

export function gatehouseCases(seed: SeedInfo, freshBatch: number): BenchCase[] {
  const client = `client_id=${enc(seed.clientId)}&client_secret=${enc(seed.clientSecret)}`
  const introspect = { method: 'POST', path: '/oauth/introspect', headers: FORM, body: `token={item}&${client}` } as const
  const tokenInfo = { method: 'GET', path: '/oauth/token/info', headers: { authorization: 'Bearer {item}' } } as const
  const authorize =
    `/oauth/authorize?response_type=code&client_id=${enc(seed.clientId)}` + `&redirect_uri=${enc(seed.redirectUri)}&scope=read&state=bench`
  return [
    {
      id: 'introspect-cached',
      title: 'POST /oauth/introspect, same few tokens',
      server: 'gatehouse',
      ...introspect,
      pool: { kind: 'cached-tokens' },
      expect: [200],
      check: { bodyIncludes: '"active":true' },
    },
    {
      id: 'introspect-miss',
      title: 'POST /oauth/introspect, fresh token each',
      server: 'gatehouse',
      ...introspect,
      pool: { kind: 'fresh-tokens', minBatch: MISS_POOL_MIN },
      expect: [200],
      check: { bodyIncludes: '"active":true' },
    },
    {
      id: 'token-info-cached',
      title: 'GET /oauth/token/info, same few tokens',
      server: 'gatehouse',
      ...tokenInfo,
      pool: { kind: 'cached-tokens' },
      expect: [200],
    },
    {
      id: 'token-info-miss',
      title: 'GET /oauth/token/info, fresh token each',
      server: 'gatehouse',
      ...tokenInfo,
      pool: { kind: 'fresh-tokens', minBatch: MISS_POOL_MIN },
      expect: [200],
    },
    ...userInfoCases(),
    {
      id: 'code-exchange',
      title: 'POST /oauth/token, fresh code each',
      server: 'gatehouse',
      method: 'POST',
      path: '/oauth/token',
      headers: FORM,
      body: `grant_type=authorization_code&code={item}&redirect_uri=${enc(seed.redirectUri)}&${client}`,
      pool: { kind: 'fresh-codes', minBatch: freshBatch },
      expect: [200],
      check: { bodyIncludes: '"access_token"' },
    },
    ...openidExchangeCases(seed, freshBatch),
    {
      // RFC 6749 §4.4: a machine's token for itself, one INSERT after its client is authenticated;
      // beside C, the ceiling of a route that inserts one row. Every eleventh token of the one
      // application revokes its oldest (MAX_TOKENS_PER_GRANT), as it would in production.
      id: 'client-credentials',
      title: 'POST /oauth/token, grant_type=client_credentials',
      server: 'gatehouse',
      method: 'POST',
      path: '/oauth/token',
      headers: FORM,
      body: `grant_type=client_credentials&client_id=${enc(seed.machine.clientId)}&client_secret=${enc(seed.machine.clientSecret)}`,
      expect: [200],
      check: { bodyIncludes: '"access_token"' },
    },
    {
      // RFC 8628 §3.4, §3.5: a device polling for a request the user has not answered yet. The
      // server reads the row by the code's digest and records the poll (SELECT, then UPDATE);
      // beside C, the ceiling of a route that writes one row. Each code is polled once, so no
      // poll falls within the interval of an earlier one: every answer is authorization_pending,
      // and a slow_down would fail the row's check.
      id: 'device-poll',
      title: 'POST /oauth/token, grant_type=device_code, pending (authorization_pending)',
      server: 'gatehouse',
      method: 'POST',
      path: '/oauth/token',
      headers: FORM,
      body: `grant_type=${enc(DEVICE_CODE_GRANT)}&device_code={item}&client_id=${enc(seed.device.clientId)}&client_secret=${enc(seed.device.clientSecret)}`,
      pool: { kind: 'fresh-device-codes', minBatch: freshBatch },
      expect: [400],
      check: { bodyIncludes: '"error":"authorization_pending"' },
    },
    {
      // RFC 6749 §6 with rotation (RFC 9700 §4.14.2, docs/expiring-tokens.md): one statement
      // authenticates the client, retires the refresh token presented, inserts its successor and
      // the new access token; beside C, the ceiling of a route that writes. Each token is sent once
      // (a family of its own), so no refresh is reuse, which would end its family and answer 400.
      id: 'refresh',
      title: 'POST /oauth/token, grant_type=refresh_token, fresh refresh token each',
      server: 'gatehouse',
      method: 'POST',
      path: '/oauth/token',
      headers: FORM,
      body: `grant_type=refresh_token&refresh_token={item}&client_id=${enc(seed.refresh.clientId)}&client_secret=${enc(seed.refresh.clientSecret)}`,
      pool: { kind: 'fresh-refresh-tokens', minBatch: freshBatch },
      expect: [200],
      check: { bodyIncludes: '"refresh_token"' },
    },
    {
      id: 'revoke',
      title: 'POST /oauth/revoke, fresh token each',
      server: 'gatehouse',
      method: 'POST',
      path: '/oauth/revoke',
      headers: FORM,
      body: `token={item}&${client}`,
      pool: { kind: 'fresh-tokens', minBatch: MISS_POOL_MIN },
      expect: [200],
    },
    {
      id: 'authorize-remembered',
      title: 'GET /oauth/authorize, remembered consent (7 of 8 sessions cached)',
      server: 'gatehouse',
      method: 'GET',
      path: authorize,
      headers: { cookie: `${SESSION_COOKIE}={item}` },
      pool: { kind: 'remembered-sessions', again: true },
      expect: [302, 303],
      check: { header: { name: 'location', includes: 'code=' } },
    },
    {
      id: 'authorize-remembered-uncached',
      title: 'GET /oauth/authorize, remembered consent, every session read',
      server: 'gatehouse',
      method: 'GET',
      path: authorize,
      // 50,000 sessions in turn: none is still in the 10,000-entry session cache when it comes back.
      headers: { cookie: `${SESSION_COOKIE}={item}` },
      pool: { kind: 'remembered-sessions' },
      expect: [302, 303],
      check: { header: { name: 'location', includes: 'code=' } },
    },
    {
      id: 'authorize-consent',
      title: 'GET /oauth/authorize, consent page',
      server: 'gatehouse',
      method: 'GET',
      path: authorize,
      // One user is enough here: the consent page issues no code, so CODE_ISSUE_LIMIT (docs/operating/limits.md)
      // does not apply, and each page forgets the user's pending requests beyond the newest 10
      // in its own INSERT, so every request still answers with the form.
      headers: { cookie: `${SESSION_COOKIE}=${seed.newCookie}` },
      expect: [200],
      check: { bodyIncludes: '<form' },
    },
  ]
}

/** The growth rows of docs/performance.md: the same two paths with 10,000 and with 1,000,000 tokens in the table. */
export function growthCases(seed: SeedInfo, freshBatch: number): BenchCase[] {
  const client = `client_id=${enc(seed.clientId)}&client_secret=${enc(seed.clientSecret)}`
  return [
    {
      id: 'introspect-miss-growth',
      title: 'POST /oauth/introspect, no cache',
      server: 'growth',
      method: 'POST',
      path: '/oauth/introspect',
      headers: FORM,
      body: `token={item}&${client}`,
      pool: { kind: 'growth-tokens' },
      expect: [200],
      check: { bodyIncludes: '"active":true' },
      // At 10 million rows the digest index is ten times shared_buffers, and a 2,000-request
      // warm-up left 8,000 of the 10,000 tokens' index pages to be read in during the measured
      // rounds (2026-11-28 10:06: rounds of 2,089, 3,012, 3,551 req/s). A server whose clients
      // present the same live tokens all day has those pages in memory; the row measures the
      // size of the table, not a cold start.
      warmupOverPool: true,
    },
    {
      id: 'code-exchange-growth',
      title: 'POST /oauth/token, fresh code each',
      server: 'growth',
      method: 'POST',
      path: '/oauth/token',
      headers: FORM,
      body: `grant_type=authorization_code&code={item}&redirect_uri=${enc(seed.redirectUri)}&${client}`,
      pool: { kind: 'fresh-codes', minBatch: freshBatch },
      expect: [200],
      check: { bodyIncludes: '"access_token"' },
      afterRun: 'remove-exchanged',
    },
  ]
}

/**
 * The growth rows' ceilings (GROWTH_BESIDE, bench/stats.ts): each growth row's own database
 * work from bare Fastify, against the same table in both phases. R: I's route with the growth
 * server's one-entry token cache, sent the growth tokens, so every request looks its token up in
 * the token table as the growth row does. E: the exchange's statement, the tokens it inserts
 * removed after each run as the growth row's are, so that neither phase's table grows.
 */
function growthCeilingCases(seed: SeedInfo, freshBatch: number): BenchCase[] {
  const exchange = statementCases(seed, freshBatch).find((c) => c.id === 'baseline-e')!
  return [
    {
      ...introspectionWorkOf(seed),
      id: 'baseline-r',
      title: "R: bare Fastify, the introspection's own work with no token cache (I's route, every token looked up)",
      path: '/r',
      pool: { kind: 'growth-tokens' },
      warmupOverPool: true,
    },
    { ...exchange, afterRun: 'remove-exchanged' },
  ]
}

/**
 * The growth phases' groups: each growth row beside its baseline and its ceiling (GROWTH_BESIDE,
 * bench/stats.ts).
 */
export function growthGroups(seed: SeedInfo, freshBatch: number): BenchCase[][] {
  const byId = new Map([...BASELINE_CASES, ...growthCeilingCases(seed, freshBatch)].map((c) => [c.id, c]))
  return growthCases(seed, freshBatch).map((c) => {
    const { baseline, ceiling } = GROWTH_BESIDE[c.id as GrowthCase]
    return [byId.get(baseline)!, byId.get(ceiling)!, c]
  })
}

/**
 * The main phase in round order: groups, each a target's baseline, the baselines that show its
 * ceiling and the Gatehouse rows judged against them, run one after the other at each
 * concurrency (bench/rounds.ts). A baseline that several groups need runs in each of them, so
 * that every ratio compares runs made seconds apart (bench/stats.ts `pairedRatio`). Rows far
 * apart in a round were measured under different conditions: on these VMs baseline A moved by
 * up to half between runs a minute apart while the rows beside it held, and K over A moved from
 * 0.85 to 1.05 between rounds of one run when A ran ten rows before K (docs/scaling.md "Where the numbers come from", the 19:16 run).
 */
const MAIN_PHASE_GROUPS: readonly (readonly string[])[] = [
  ['baseline-a', 'baseline-m', 'baseline-k'],
  ['baseline-a', 'baseline-i', 'baseline-q', 'introspect-cached'],
  ['baseline-a', 'baseline-j', 'baseline-l', 'token-info-cached', 'userinfo-cached'],
  ['baseline-b', 'baseline-n', 'introspect-miss', 'baseline-o', 'token-info-miss', 'userinfo-miss'],
  ['baseline-c', 'baseline-e', 'code-exchange', ...OPENID_ROWS.map(({ suffix }) => `code-exchange-openid-${suffix}`)],
  ['baseline-c', 'baseline-h', 'authorize-remembered', 'baseline-f', 'authorize-remembered-uncached', 'authorize-consent'],
  ['baseline-d', 'baseline-g', 'baseline-p', 'revoke'],
  ['baseline-c', 'client-credentials', 'device-poll', 'refresh'],
]

/** Every main-phase row in its group (MAIN_PHASE_GROUPS); a row no group names runs in a last group of its own. */
export function mainPhaseGroups(seed: SeedInfo, freshBatch: number): BenchCase[][] {
  const all = [...BASELINE_CASES, ...statementCases(seed, freshBatch), ...gatehouseCases(seed, freshBatch)]
  const byId = new Map(all.map((c) => [c.id, c]))
  const groups = MAIN_PHASE_GROUPS.map((ids) => ids.flatMap((id) => byId.get(id) ?? []))
  const grouped = new Set(MAIN_PHASE_GROUPS.flat())
  const rest = all.filter((c) => !grouped.has(c.id))
  return rest.length === 0 ? groups : [...groups, rest]
}

/** Every case of the groups once, in the order of its first group. */
export function distinctCases(groups: readonly (readonly BenchCase[])[]): BenchCase[] {
  return [...new Map(groups.flat().map((c) => [c.id, c])).values()]
}

/** Every main-phase row once (bench/instructions.ts counts each once). */
export function mainPhaseCases(seed: SeedInfo, freshBatch: number): BenchCase[] {
  return distinctCases(mainPhaseGroups(seed, freshBatch))
}

/**
 * The groups that keep a selected row (`--only`), each cut to its selected rows: a group whose
 * remaining rows all run in another kept group is left out, so that `--only token-info` does not
 * measure A alone in the groups of K and of introspection.
 */
export function selectGroups(groups: readonly (readonly BenchCase[])[], chosen: ReadonlySet<string>): BenchCase[][] {
  const cut = groups.map((g) => g.filter((c) => chosen.has(c.id))).filter((g) => g.length > 0)
  const groupsOf = new Map<string, number>()
  for (const g of cut) for (const c of g) groupsOf.set(c.id, (groupsOf.get(c.id) ?? 0) + 1)
  const kept = cut.filter((g) => g.some((c) => groupsOf.get(c.id) === 1))
  const covered = new Set(kept.flat().map((c) => c.id))
  for (const g of cut) {
    if (kept.includes(g) || g.every((c) => covered.has(c.id))) continue
    kept.push(g)
    for (const c of g) covered.add(c.id)
  }
  return cut.filter((g) => kept.includes(g))
}
