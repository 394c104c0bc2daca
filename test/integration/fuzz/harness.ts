import { sha256Hex } from '../../../src/lib/crypto.js'
import { Writable } from 'node:stream'
import fc from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import { resolveSession, startSession } from '../../../src/accounts/sessions/sessions.js'
import { generateAccessToken, generateRefreshToken } from '../../../src/lib/tokens.js'
import { computeS256Challenge } from '../../../src/oauth/token/pkce.js'
import { TEST_ISSUER, buildTestApp, type TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { API_ROUTES, outsidePages, routeTree } from '../../helpers/route-tree.js'
import { BRAND_LOGO_FIXTURE } from '../../helpers/brand.js'
import { createAccessToken, createApplication } from '../../helpers/factories.js'
import {
  type Template,
  FORM,
  type WireBody,
  authorizationHeader,
  cookieHeader,
  extraHeaders,
  headerText,
  method,
  text,
  wireBody,
  wireParams,
} from './wire.js'

/*
 * The harness of the property-based fuzz (docs/development.md): a Gatehouse over a real database, a user
 * logged in through the real pages with a valid CSRF token, an application of theirs with live
 * tokens, authorization codes, held consent requests and a grant, so that generated requests can
 * reach past authentication and the CSRF check into every handler; and the properties every
 * response must keep, checked after each request.
 *
 * FUZZ_SEED picks the run (fixed by default, so CI is reproducible); FUZZ_RUNS multiplies the
 * number of cases (default 1).
 */
export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20_250_909)
const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 1)
if (!Number.isSafeInteger(FUZZ_SEED)) throw new Error(`FUZZ_SEED must be an integer, not ${process.env.FUZZ_SEED}`)
if (!(FUZZ_RUNS > 0)) throw new Error(`FUZZ_RUNS must be a positive number, not ${process.env.FUZZ_RUNS}`)

export const OWN_ORIGIN = new URL(TEST_ISSUER).origin
/** The origin of a registered single-page app: CORS answers it (src/http/cors.ts). */
export const SPA_ORIGIN = 'https://spa.gatehouse.test'
export const REDIRECT_URI = 'https://client.example/cb'
export const VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'
/** A resource identifier (RFC 8707) the world's resource server declared. */
export const FUZZ_RESOURCE = 'https://api.fuzz.test/'

/**
 * `resource` values (RFC 8707 §2), mostly absent: the declared one, undeclared and malformed
 * ones. The wire repeats a parameter now and then, which `resource` alone may be.
 */
export const resourceValues = fc.oneof(
  { weight: 6, arbitrary: fc.constant('') },
  { weight: 3, arbitrary: fc.constant(FUZZ_RESOURCE) },
  fc.constantFrom('https://unknown.fuzz.test/', `${FUZZ_RESOURCE}#x`, 'api.fuzz.test', 'urn:x:y', `https://${'a'.repeat(3000)}/`),
  text(40),
)
const PASSWORD = 'correct horse battery'

export interface FuzzRequest {
  method: string
  url: string
  headers: Record<string, string>
  payload: string | Buffer | undefined
  remoteAddress: string
}

/** What a generated request may use; fields change as requests log out, delete or revoke. */
export interface World {
  t: TestContext
  user: { id: string; email: string; password: string }
  sessionId: string
  csrfCookie: string
  csrfToken: string
  app: { id: string; clientId: string; clientSecret: string }
  /** Another user's application: its id is a real one that the session must not reach. */
  foreign: { id: string; clientId: string; clientSecret: string }
  /** Live access tokens of `app`. */
  tokens: string[]
  revokedTokens: string[]
  codes: string[]
  heldIds: string[]
  grantId: string
  /** Device codes of `app` (RFC 8628), and the user codes and consent-page request ids of others. */
  deviceCodes: string[]
  userCodes: string[]
  deviceRequestIds: string[]
}

/** The logged-in browser's cookies: its session and its form token's cookie. */
const loggedInCookies = (world: World): string => `gatehouse_session=${world.sessionId}; gatehouse_csrf=${world.csrfCookie}`

/**
 * A request as the page's own browser sends it: the session's cookies (unless `session` is
 * false) and any `cookie` of the page's own, and for a POST the form with the session's form
 * token, from the page's own origin.
 * For `fuzz`'s examples.
 */
export function browserRequest(
  world: World,
  method: 'GET' | 'POST',
  path: string,
  params: Record<string, string> = {},
  { session = true, cookie }: { session?: boolean; cookie?: string } = {},
): FuzzRequest {
  const headers: Record<string, string> = { 'sec-fetch-site': 'same-origin' }
  const cookies = [...(session ? [loggedInCookies(world)] : []), ...(cookie === undefined ? [] : [cookie])]
  if (cookies.length > 0) headers.cookie = cookies.join('; ')
  if (method === 'GET') {
    const query = new URLSearchParams(params).toString()
    return { method, url: query === '' ? path : `${path}?${query}`, headers, payload: undefined, remoteAddress: '127.0.0.1' }
  }
  headers.origin = OWN_ORIGIN
  headers['content-type'] = FORM
  const payload = new URLSearchParams({ _csrf: world.csrfToken, ...params }).toString()
  return { method, url: path, headers, payload, remoteAddress: '127.0.0.1' }
}

/** A value read from the world when a case is generated, so it follows the world's changes. */
export const live = <T>(get: () => T): fc.Arbitrary<T> => fc.constant(null).map(get)
/** One of a list read from the world when a case is generated. */
export const liveOneOf = (get: () => readonly string[]): fc.Arbitrary<string> =>
  fc.nat().map((i) => {
    const list = get()
    return list.length === 0 ? '' : list[i % list.length]!
  })

export interface Harness {
  world: World
  /** Sends one request and throws, describing it, when a response breaks a property. */
  send(request: FuzzRequest): Promise<LightMyRequestResponse>
  /**
   * Runs `numRuns` (times FUZZ_RUNS) generated requests under the seed, after `examples`: requests
   * that reach a suite's deepest answers whatever the seed, so that its "got this deep" checks
   * hold under every FUZZ_SEED and not only under the default one (fast-check runs examples
   * first, through the same property).
   */
  fuzz(name: string, requests: fc.Arbitrary<FuzzRequest>, numRuns: number, examples?: readonly FuzzRequest[]): Promise<void>
  /**
   * Outcomes seen per "METHOD name": the status, with a redirect's target path ("303 /login") or
   * a JSON error's code ("401 invalid_client"), to show that the fuzz got past the guards.
   */
  outcomes(key: string): string[]
  /**
   * The routes of `suite` (`suiteOf`) that no request of this harness has reached so far, as
   * "METHOD pattern": a HEAD route counts as reached with its GET, which Fastify made it from.
   */
  unreached(suite: FuzzSuite): string[]
  close(): Promise<void>
}

const unhandled: unknown[] = []
process.on('unhandledRejection', (reason) => unhandled.push(reason))
process.on('uncaughtException', (error) => unhandled.push(error))

/** `env`: configuration besides the harness's own (e.g. TRUST_PROXY, so X-Forwarded-For and X-Request-Id are read). */
export async function createHarness(env: Record<string, string> = {}): Promise<Harness> {
  // Logged at info, so every request's log line is built (URL redaction, serializers) from hostile input;
  // only lines at error level or above are kept, each one a failure.
  const errorLines: string[] = []
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      const line = String(chunk)
      if (Number(/"level":(\d+)/.exec(line)?.[1] ?? 60) >= 50) errorLines.push(line)
      done()
    },
  })
  // Route patterns that answered a fuzz request; a 404 has none.
  const reached = new Set<string>()
  // High limits so the fuzz reaches the handlers instead of the rate limiter (429s are tested elsewhere).
  const t = await buildTestApp(
    {
      LOGIN_FAILURE_LIMIT: '1000000',
      LOGIN_ADDRESS_FAILURE_LIMIT: '1000000',
      LOGIN_ACCOUNT_ATTACK_LIMIT: '1000000',
      TOKEN_AUTH_FAILURE_LIMIT: '1000000',
      DEVICE_CODE_ENTRY_LIMIT: '1000',
      // An https client_id is then the URL of a metadata document (docs/agents.md): the fuzz's own
      // are all refused by their form or their address, before any connection.
      CLIENT_ID_METADATA_DOCUMENTS: 'true',
      CLIENT_ID_METADATA_FETCH_TIMEOUT_MS: '1000',
      LOG_LEVEL: 'info',
      // The logo's route exists only with a logo (src/http/routes/static.ts).
      BRAND_LOGO_FILE: BRAND_LOGO_FIXTURE,
      ...env,
    },
    undefined,
    {
      logStream,
      beforeReady: (app) =>
        app.addHook('onResponse', (request, _reply, done) => {
          if (request.routeOptions.url !== undefined) reached.add(`${request.method} ${request.routeOptions.url}`)
          done()
        }),
    },
  )
  const routes = [...routeTree(t.app).keys()]
  const world = await populate(t)
  // The set-up's requests keep the properties too: an error line here would otherwise go unread.
  if (errorLines.length > 0) throw new Error(`the fuzz's set-up logged at error level: ${errorLines[0]!.slice(0, 600)}`)
  // What the set-up's own requests reached does not count as fuzzed.
  reached.clear()
  const seen = new Map<string, Set<string>>()
  let sending: string | undefined
  let restored = await writeHorizon(t)

  async function send(request: FuzzRequest): Promise<LightMyRequestResponse> {
    const logsBefore = errorLines.length
    const unhandledBefore = unhandled.length
    const res = await t.app.inject({
      method: request.method as 'GET',
      url: request.url,
      headers: request.headers,
      payload: request.payload,
      remoteAddress: request.remoteAddress,
    })
    // Let a rejection that escaped the request surface before judging it.
    await new Promise((resolve) => setImmediate(resolve))
    const problems = judge(request, res)
    for (const line of errorLines.slice(logsBefore)) problems.push(`logged at error level: ${line.slice(0, 600)}`)
    for (const reason of unhandled.slice(unhandledBefore)) problems.push(`unhandled rejection or exception: ${String(reason)}`)
    if (sending !== undefined) {
      const key = `${request.method} ${sending}`
      // "303 /login", "400 invalid_grant": a redirect's target path, or a JSON error's code.
      const error = /^\{"error":"([a-z_]+)"/.exec(res.body)?.[1]
      const detail = res.headers.location !== undefined ? ` ${String(res.headers.location).split(/[?#]/)[0]}` : error ? ` ${error}` : ''
      seen.set(key, (seen.get(key) ?? new Set()).add(`${res.statusCode}${detail}`))
    }
    if (problems.length > 0) throw new Error(describeFailure(problems, request, res))
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      // Nothing written since the last restore: the world is still as it left it.
      const horizon = await writeHorizon(t)
      if (horizon !== restored) {
        await restore(world)
        restored = await writeHorizon(t)
      }
    }
    return res
  }

  return {
    world,
    send,
    async fuzz(name, requests, numRuns, examples = []) {
      sending = name
      try {
        await fc.assert(
          fc.asyncProperty(requests, async (request) => {
            await send(request)
          }),
          { seed: FUZZ_SEED, numRuns: Math.max(1, Math.round(numRuns * FUZZ_RUNS)), examples: examples.map((e): [FuzzRequest] => [e]) },
        )
      } finally {
        sending = undefined
      }
    },
    outcomes: (key) => [...(seen.get(key) ?? [])].sort(),
    unreached: (suite) =>
      routes.filter(
        (route) =>
          suiteOf(route) === suite && !reached.has(route) && !(route.startsWith('HEAD ') && reached.has(route.replace('HEAD', 'GET'))),
      ),
    close: () => t.close(),
  }
}

/**
 * A user signed up and logged in through the real pages, with an application that allows both
 * flows, live tokens, codes minted through remembered consent (one with PKCE), consent requests
 * held for the session, and a grant.
 */
async function populate(t: TestContext): Promise<World> {
  const email = 'fuzz@example.com'
  const s = await new BrowserSession(t.app).signUpAndLogIn(email, PASSWORD)
  const user = await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()
  const scopes = ['openid', 'read', 'write', 'write_members', 'write_teams', 'write_events', 'write_users']
  const app = await createApplication(t.db, { ownerId: user.id, redirectUris: [REDIRECT_URI], scopes })
  await t.db.updateTable('applications').set({ allow_implicit: true, allow_device_flow: true }).where('id', '=', app.id).execute()
  const foreign = await createApplication(t.db, { redirectUris: [REDIRECT_URI] })
  const spa = await createApplication(t.db, { ownerId: user.id, redirectUris: [`${SPA_ORIGIN}/callback`] })
  // A resource server with a declared identifier, so that `resource` reaches past invalid_target.
  const api = await createApplication(t.db, { redirectUris: [REDIRECT_URI] })
  await t.db.updateTable('applications').set({ is_resource_server: true }).where('id', '=', api.id).execute()
  await t.db
    .insertInto('resource_identifiers')
    .values({ identifier: FUZZ_RESOURCE, application_id: api.id, created_at: new Date() })
    .execute()
  await t.db.updateTable('applications').set({ kind: 'spa', secret_hash: null }).where('id', '=', spa.id).execute()
  const tokens: string[] = []
  for (let i = 0; i < 3; i++) {
    // The last one carries the identity scopes, so UserInfo answers claims too.
    const scopes = i === 2 ? ['openid', 'email', 'profile'] : ['read']
    tokens.push((await createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes })).token)
  }

  const authorize = (extra: string) =>
    s.get(`/oauth/authorize?client_id=${app.clientId}&redirect_uri=${encodeURIComponent(REDIRECT_URI)}&state=s1&${extra}`)
  const heldIds: string[] = []
  // The last two are OpenID Connect's implicit flow (Core 3.2): approving them signs an ID Token.
  const oidc = 'scope=openid%20write_events&nonce=n1'
  const held = ['code', 'code', 'code', 'token', 'code', 'token', 'code'].map((type) => `response_type=${type}&scope=write_events`)
  for (const request of [...held, `response_type=id_token&${oidc}`, `response_type=token%20id_token&${oidc}`]) {
    const page = await authorize(request)
    const id = /name="request_id" value="([^"]+)"/.exec(page.body)?.[1]
    if (page.statusCode !== 200 || !id) throw new Error(`no consent page: ${page.statusCode} ${page.body.slice(0, 300)}`)
    heldIds.push(id)
  }
  const approved = await s.post('/oauth/authorize', { request_id: heldIds.shift()!, decision: 'approve' })
  const codes = [new URL(String(approved.headers.location)).searchParams.get('code')!]
  const pkce = `&code_challenge=${computeS256Challenge(VERIFIER)}&code_challenge_method=S256`
  for (const extra of ['scope=write_events', 'scope=write_events', `scope=write_events${pkce}`, 'scope=write_events&prompt=none']) {
    const res = await authorize(`response_type=code&${extra}`)
    const code = res.statusCode === 302 ? new URL(String(res.headers.location)).searchParams.get('code') : null
    if (!code) throw new Error(`no code: ${res.statusCode} ${res.body.slice(0, 300)}`)
    codes.push(code)
  }
  const grants = await s.get('/authorized-applications')
  const grantId = /\/authorized-applications\/([0-9a-f-]{36})\/revoke/.exec(grants.body)?.[1]
  if (!grantId) throw new Error('no grant listed')
  await s.get('/applications')
  const device = await deviceRequests(t, s, app)
  return {
    t,
    user: { id: user.id, email, password: PASSWORD },
    sessionId: s.cookies.get('gatehouse_session')!,
    csrfCookie: s.cookies.get('gatehouse_csrf')!,
    csrfToken: s.lastCsrf!,
    app: { id: app.id, clientId: app.clientId, clientSecret: app.clientSecret },
    foreign: { id: foreign.id, clientId: foreign.clientId, clientSecret: foreign.clientSecret },
    tokens,
    revokedTokens: [],
    codes,
    heldIds,
    grantId,
    ...device,
  }
}

/** Device authorizations of `app` (RFC 8628): codes to poll with, and user codes typed on /device. */
async function deviceRequests(t: TestContext, s: BrowserSession, app: { clientId: string; clientSecret: string }) {
  const deviceCodes: string[] = []
  const userCodes: string[] = []
  const deviceRequestIds: string[] = []
  for (let i = 0; i < 4; i++) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/device_authorization',
      headers: { 'content-type': FORM },
      payload: new URLSearchParams({ client_id: app.clientId, client_secret: app.clientSecret, scope: 'read' }).toString(),
    })
    const body = res.json() as { device_code: string; user_code: string }
    deviceCodes.push(body.device_code)
    userCodes.push(body.user_code)
    if (i % 2 === 0) continue
    await s.get('/device')
    const page = await s.post('/device', { user_code: body.user_code })
    const id = /name="request_id" value="([^"]+)"/.exec(page.body)?.[1]
    if (!id) throw new Error(`no device consent page: ${page.statusCode} ${page.body.slice(0, 300)}`)
    deviceRequestIds.push(id)
  }
  return { deviceCodes, userCodes, deviceRequestIds }
}

/**
 * The first transaction id not yet handed out: every transaction that writes takes one, and one
 * that only reads takes none (PostgreSQL's "Transactions and Identifiers"). While it stands
 * still, nothing was written since it was read, by the app or by a test. On a server other
 * databases move it too, so there it only ever says "look again".
 */
async function writeHorizon(t: TestContext): Promise<string> {
  const { rows } = await sql<{ xmax: string }>`select pg_snapshot_xmax(pg_current_snapshot())::text as xmax`.execute(t.db)
  return rows[0]!.xmax
}

/**
 * Puts back what a request may have taken away on purpose: the session (log-out, a new log-in),
 * the application (deleted from the console) and a live token (revoked). The CSRF secret cookie
 * needs nothing: the harness keeps sending the one its token belongs to. It runs after a request
 * that is not a GET once something was written (writeHorizon), and writes only what a request
 * changed: on PGlite its statements after every request cost more than the requests themselves.
 */
async function restore(world: World): Promise<void> {
  const { t } = world
  if (!(await resolveSession(t.db, world.sessionId, t.clock()))) {
    world.sessionId = await startSession(t.db, world.user.id, t.clock(), t.config.sessionTtlMs)
  }
  // The admin pages may have suspended or deleted them (the fuzz user is an operator there).
  const apps = await t.db
    .selectFrom('applications')
    .select(['id', 'suspended_at'])
    .where('id', 'in', [world.app.id, world.foreign.id])
    .execute()
  const suspended = apps.filter((a) => a.suspended_at !== null).map((a) => a.id)
  if (suspended.length > 0) await t.db.updateTable('applications').set({ suspended_at: null }).where('id', 'in', suspended).execute()
  if (!apps.some((a) => a.id === world.foreign.id)) {
    const foreign = await createApplication(t.db, { redirectUris: [REDIRECT_URI] })
    world.foreign = { id: foreign.id, clientId: foreign.clientId, clientSecret: foreign.clientSecret }
  }
  if (!apps.some((a) => a.id === world.app.id)) {
    const created = await createApplication(t.db, { ownerId: world.user.id, redirectUris: [REDIRECT_URI] })
    await t.db.updateTable('applications').set({ allow_implicit: true, allow_device_flow: true }).where('id', '=', created.id).execute()
    world.app = { id: created.id, clientId: created.clientId, clientSecret: created.clientSecret }
    world.tokens = []
  }
  // Revocation and deletion are answers the fuzz asks for. Revoked tokens stay known (a few), live
  // ones keep the rest reachable.
  const live = new Set(
    world.tokens.length === 0
      ? []
      : (
          await t.db
            .selectFrom('access_tokens')
            .select('token_hash')
            .where('token_hash', 'in', world.tokens.map(sha256Hex))
            .where('revoked_at', 'is', null)
            .execute()
        ).map((r) => r.token_hash),
  )
  const revoked = world.tokens.filter((token) => !live.has(sha256Hex(token)))
  world.revokedTokens = [...revoked, ...world.revokedTokens].slice(0, 3)
  world.tokens = world.tokens.filter((token) => live.has(sha256Hex(token)))
  if (world.tokens.length === 0) {
    world.tokens.push((await createAccessToken(t.db, { userId: world.user.id, applicationId: world.app.id })).token)
  }
}

/** The fuzz suite (a file of this directory) that must reach a route, given as "METHOD pattern". */
export type FuzzSuite = 'oauth-api' | 'pages' | 'account'

/** The account pages' routes (account.test.ts); the profile and the security log are fuzzed with the pages. */
const ACCOUNT_ROUTE =
  /^[A-Z]+ \/(account(\/(?!profile$|security-log$).*)?|forgot-password|reset-password|verify-email|confirm-email|cancel-email-change|login\/(passkey|second-factor)(\/.*)?)$/

/**
 * Every route belongs to one suite, so a new route fails the suite it falls to until a fuzz
 * reaches it: the routes outside the page context to oauth-api.test.ts, the account pages to
 * account.test.ts, every other page to pages.test.ts.
 */
export function suiteOf(route: string): FuzzSuite {
  if (outsidePages(route)) return 'oauth-api'
  return ACCOUNT_ROUTE.test(route) ? 'account' : 'pages'
}

/** Fastify's default error body, which no Gatehouse response may carry: every context maps errors itself. */
function isFastifyDefaultError(body: unknown): boolean {
  return typeof body === 'object' && body !== null && 'statusCode' in body && 'error' in body && 'message' in body
}

function parseJson(body: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(body) }
  } catch {
    return { ok: false }
  }
}

/** The properties every response keeps, whatever was sent. */
function judge(request: FuzzRequest, res: LightMyRequestResponse): string[] {
  const problems: string[] = []
  const type = String(res.headers['content-type'] ?? '')
  // The router decodes percent-escapes before matching: `/%6fauth/token` is the token endpoint.
  const path = request.url.split('?')[0]!.replace(/%([0-9a-f]{2})/gi, (escape, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16))
    return /^[A-Za-z0-9\-._~]$/.test(c) ? c : escape
  })
  const kind = API_ROUTES.get(`${request.method} ${path}`) ?? 'page'
  const json = parseJson(res.body)

  if (res.statusCode >= 500) problems.push(`status ${res.statusCode}`)
  if (json.ok && isFastifyDefaultError(json.value)) problems.push("Fastify's default error body")

  if (kind === 'oauth-json') {
    const head = request.method === 'HEAD'
    // The only bodiless answers: RFC 7009 2.2 (revocation succeeded) and RFC 6750 3.1 (no credentials: a bare
    // challenge, with DPoP offered beside it, RFC 9449 §7.1).
    const bodiless =
      (path === '/oauth/revoke' && res.statusCode === 200) ||
      ((path === '/oauth/token/info' || path === '/oauth/userinfo') &&
        res.statusCode === 401 &&
        /^Bearer realm="[^"]*", DPoP algs="[^"]*"$/.test(String(res.headers['www-authenticate'])))
    const streaming = path === '/oauth/revocations/stream' && res.statusCode === 200
    if (streaming) problems.push('the revocation stream opened for generated credentials')
    else if (!bodiless || res.body !== '') {
      if (!/^application\/json(;|$)/.test(type)) problems.push(`content-type ${type || '(none)'} instead of application/json`)
      if (!head && !json.ok) problems.push('a body that is not JSON')
    }
  } else if (kind === 'page-json' && res.statusCode >= 400) {
    if (!/^application\/json(;|$)/.test(type) || !json.ok)
      problems.push(`a passkey endpoint answered ${res.statusCode} without a JSON body`)
  } else if (kind === 'page' && res.statusCode >= 400) {
    if (!/^text\/html(;|$)/.test(type)) problems.push(`a page answered ${res.statusCode} with content-type ${type || '(none)'}, not HTML`)
  }
  return problems
}

const excerpt = (s: string, max: number) => (s.length > max ? `${s.slice(0, max)}… (${s.length} characters)` : s)

function describeFailure(problems: string[], request: FuzzRequest, res: LightMyRequestResponse): string {
  const body =
    request.payload === undefined
      ? '(none)'
      : typeof request.payload === 'string'
        ? JSON.stringify(excerpt(request.payload, 2000))
        : `bytes, base64: ${excerpt(request.payload.toString('base64'), 2000)}`
  return [
    problems.join('\n'),
    `request: ${request.method} ${excerpt(request.url, 2000)}`,
    `headers: ${excerpt(JSON.stringify(request.headers), 2000)}`,
    `body: ${body}`,
    `from: ${request.remoteAddress}`,
    `response: ${res.statusCode} ${String(res.headers['content-type'] ?? '')} ${JSON.stringify(excerpt(res.body, 600))}`,
    `reproduce: FUZZ_SEED=${FUZZ_SEED}${FUZZ_RUNS === 1 ? '' : ` FUZZ_RUNS=${FUZZ_RUNS}`} npx vitest run test/integration/fuzz/`,
  ].join('\n')
}

/** A route to fuzz: its path, the methods it serves, the parameters it reads. */
export interface RouteSpec {
  methods: readonly string[]
  path: fc.Arbitrary<string>
  /** Parameters read from the query string. */
  query?: Template
  /** Parameters read from the body; a page form's `_csrf` is added by `requests`. */
  body?: Template
  /** A page form: the body carries the session's CSRF token, most of the time. */
  form?: boolean
  /** Whether Basic credentials may be the application's real ones (never for the revocation stream, which would stay open). */
  realClientCredentials?: boolean
  /** Cookies the route reads besides the session's and CSRF's (a pending log-in), sent with them most of the time. */
  cookies?: fc.Arbitrary<string>
  /** Headers the route reads besides Authorization (a DPoP proof), each sent now and then. */
  headers?: Record<string, fc.Arbitrary<string>>
}

/**
 * The real values a request may carry, read from the world when a case is generated: the
 * application's client id and secret (or, with `realSecrets` false, never a working secret), its
 * tokens (live, revoked later, or with a broken checksum), codes, held consent requests and ids.
 */
export function knownValues(world: World, realSecrets = true) {
  // Ids that are not ids: every id column is a uuid, which PostgreSQL refuses to compare with anything else.
  const uuid = fc.oneof(
    { weight: 2, arbitrary: fc.uuid() },
    {
      weight: 1,
      arbitrary: fc.constantFrom('x', '0', 'not-a-uuid', '00000000-0000-0000-0000-00000000000g', '{00000000-0000-0000-0000-000000000000}'),
    },
    { weight: 1, arbitrary: fc.uuid().map((u) => `${u.toUpperCase()}x`) },
    { weight: 1, arbitrary: text(12) },
  )
  return {
    clientIds: fc.oneof(
      { weight: 4, arbitrary: live(() => world.app.clientId) },
      { weight: 1, arbitrary: live(() => world.foreign.clientId) },
      { weight: 1, arbitrary: text(40) },
      // Metadata document URLs (docs/agents.md), on IP literals only: no name is ever looked up.
      {
        weight: 1,
        arbitrary: fc.oneof(
          fc.constantFrom(
            'https://127.0.0.1/client.json',
            'https://[::1]/client.json',
            'https://169.254.169.254/latest/meta-data',
            'https://[::ffff:7f00:1]/c',
            'https://10.0.0.1/c',
            'https://127.0.0.1/c#f',
            'https://u:p@127.0.0.1/c',
            'https://127.0.0.1/a/../c',
            'https://127.0.0.1',
            'https://',
            'http://127.0.0.1/c',
          ),
          text(20).map((t) => `https://127.0.0.1/${t}`),
        ),
      },
    ),
    secrets: realSecrets
      ? fc.oneof(
          { weight: 4, arbitrary: live(() => world.app.clientSecret) },
          { weight: 1, arbitrary: live(() => world.foreign.clientSecret) },
        )
      : fc.oneof(
          live(() => world.app.clientSecret.slice(0, -1)),
          live(() => world.foreign.clientSecret.slice(1)),
          text(50),
        ),
    tokens: fc.oneof(
      { weight: 4, arbitrary: liveOneOf(() => world.tokens) },
      { weight: 1, arbitrary: liveOneOf(() => (world.revokedTokens.length > 0 ? world.revokedTokens : world.tokens)) },
      { weight: 1, arbitrary: fc.constant(null).map(() => generateAccessToken()) },
      // A refresh token where an access token goes, and at POST /oauth/revoke (docs/expiring-tokens.md).
      { weight: 1, arbitrary: fc.constant(null).map(() => generateRefreshToken()) },
      { weight: 1, arbitrary: liveOneOf(() => world.tokens).map((tk) => `${tk.slice(0, -1)}A`) },
    ),
    codes: fc.oneof({ weight: 4, arbitrary: liveOneOf(() => world.codes) }, { weight: 1, arbitrary: text(50).map((s) => `gac_${s}`) }),
    heldIds: fc.oneof({ weight: 4, arbitrary: liveOneOf(() => world.heldIds) }, { weight: 1, arbitrary: uuid }),
    appIds: fc.oneof(
      { weight: 6, arbitrary: live(() => world.app.id) },
      { weight: 1, arbitrary: live(() => world.foreign.id) },
      { weight: 1, arbitrary: uuid },
    ),
    grantIds: fc.oneof({ weight: 4, arbitrary: live(() => world.grantId) }, { weight: 1, arbitrary: uuid }),
    deviceCodes: fc.oneof(
      { weight: 4, arbitrary: liveOneOf(() => world.deviceCodes) },
      { weight: 1, arbitrary: text(50).map((s) => `gdc_${s}`) },
    ),
    userCodes: fc.oneof(
      { weight: 4, arbitrary: liveOneOf(() => world.userCodes) },
      { weight: 1, arbitrary: liveOneOf(() => world.userCodes).map((c) => c.toLowerCase().replace('-', ' ')) },
      { weight: 1, arbitrary: fc.constantFrom('', 'BCDF-GHJK', 'AEIO-UAEI', 'BCDFGHJKL', '----------') },
      { weight: 1, arbitrary: text(30) },
    ),
    deviceRequestIds: fc.oneof({ weight: 4, arbitrary: liveOneOf(() => world.deviceRequestIds) }, { weight: 1, arbitrary: uuid }),
    /** Someone else's id, or something that is no id at all. */
    otherIds: uuid,
  }
}

/**
 * Requests to one route: its methods mostly, odd ones now and then; its parameters in the query
 * and the body, hostile or not; real or garbage credentials, cookies, Origin and Sec-Fetch-Site.
 */
export function requests(world: World, spec: RouteSpec): fc.Arbitrary<FuzzRequest> {
  const known = knownValues(world, spec.realClientCredentials !== false)
  const sessionCookies = fc.oneof(
    { weight: 8, arbitrary: live(() => loggedInCookies(world)) },
    { weight: 2, arbitrary: live(() => `gatehouse_csrf=${world.csrfCookie}`) },
    { weight: 1, arbitrary: live(() => `gatehouse_session=${world.sessionId}`) },
  )
  const realCookies = spec.cookies
    ? fc.oneof(
        { weight: 1, arbitrary: sessionCookies },
        { weight: 3, arbitrary: fc.tuple(sessionCookies, spec.cookies).map(([session, more]) => `${session}; ${more}`) },
      )
    : sessionCookies
  const bodyTemplate: Template = spec.form
    ? { _csrf: fc.oneof({ weight: 8, arbitrary: live(() => world.csrfToken) }, { weight: 1, arbitrary: text() }), ...spec.body }
    : (spec.body ?? {})
  const origin = fc.oneof(
    { weight: 4, arbitrary: fc.constant(OWN_ORIGIN) },
    { weight: 2, arbitrary: fc.constant(SPA_ORIGIN) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        'null',
        'https://evil.example',
        'http://evil.gatehouse.test',
        'http://GATEHOUSE.TEST',
        `${OWN_ORIGIN}:80`,
        `${OWN_ORIGIN}/`,
        'https://gatehouse.test',
      ),
    },
    { weight: 1, arbitrary: headerText() },
  )
  const fetchSite = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('same-origin', 'none') },
    { weight: 2, arbitrary: fc.constantFrom('cross-site', 'same-site', 'SAME-ORIGIN', 'same-origin, same-origin') },
    { weight: 1, arbitrary: headerText() },
  )
  const query = spec.query ?? {}
  const hasBody = spec.body !== undefined || spec.form === true
  const noBody: WireBody = { contentType: undefined, payload: undefined }
  const authorization = authorizationHeader(known.clientIds, known.secrets, known.tokens)
  const remoteAddress = fc.constantFrom('127.0.0.1', '198.51.100.7', '::1')
  const routeHeaders = spec.headers
    ? fc.option(fc.record(spec.headers, { requiredKeys: [] }), { freq: 2 }).map((h) => h ?? {})
    : fc.constant({})

  const queryString = wireParams(query, 12_000).map((q) => `?${q}`)
  const hasQuery = Object.keys(query).length > 0
  /** Whether a request with this method carries the route's parameters in its body. */
  const inBody = (m: string) => hasBody && m !== 'GET' && m !== 'HEAD'

  // Hostile everywhere at once: most such requests stop at the first check they fail.
  const hostile = method(spec.methods).chain((m) =>
    fc.record({
      method: fc.constant(m),
      path: spec.path,
      query: fc.oneof(
        // Parameters read from the body: a query next to them is the odd case.
        { weight: inBody(m) ? 1 : hasQuery ? 6 : 2, arbitrary: queryString },
        { weight: 3, arbitrary: fc.constant('') },
      ),
      body: inBody(m)
        ? wireBody(bodyTemplate)
        : fc.oneof({ weight: 6, arbitrary: fc.constant(noBody) }, wireBody(hasBody ? bodyTemplate : query)),
      authorization: fc.option(authorization, { freq: 2 }),
      cookie: fc.option(cookieHeader(realCookies), { freq: 4 }),
      origin: fc.option(origin, { freq: 2 }),
      fetchSite: fc.option(fetchSite, { freq: 2 }),
      extra: fc.tuple(extraHeaders, routeHeaders).map(([e, h]) => ({ ...e, ...h })),
      remoteAddress,
    }),
  )
  // A request as the route's own clients send it, hostile only in its parameters (some dropped,
  // repeated, or with hostile values): these get past the guards into the handler. A POST route
  // that also reads the query (token, revocation) gets its parameters there now and then, with an
  // empty body (Content-Length: 0), as the spec's clients send them.
  const calm = fc.constantFrom(...spec.methods).chain((m) => {
    const where = !inBody(m)
      ? fc.constant('query' as const)
      : hasQuery
        ? fc.constantFrom('body', 'body', 'body', 'query')
        : fc.constant('body' as const)
    return where.chain((place) =>
      fc.record({
        method: fc.constant(m),
        path: spec.path,
        query: place === 'query' && hasQuery ? wireParams(query, 12_000, true).map((q) => `?${q}`) : fc.constant(''),
        body:
          place === 'body'
            ? wireParams(bodyTemplate, 70_000, true).map((payload): WireBody => ({ contentType: FORM, payload }))
            : fc.constant(inBody(m) ? { contentType: FORM, payload: '' } : noBody),
        // Now and then: with the client's credentials in the body as well, it is a conflict.
        authorization: fc.oneof({ weight: 2, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: authorization }),
        cookie: fc.option(realCookies, { freq: 10 }),
        origin: fc.option(fc.constant(OWN_ORIGIN)),
        fetchSite: fc.option(fc.constant('same-origin')),
        extra: routeHeaders,
        remoteAddress,
      }),
    )
  })
  return fc.oneof(hostile, calm).map((r) => {
    const headers: Record<string, string> = { ...r.extra }
    if (r.authorization !== null) headers.authorization = r.authorization
    if (r.cookie !== null) headers.cookie = r.cookie
    if (r.origin !== null) headers.origin = r.origin
    if (r.fetchSite !== null) headers['sec-fetch-site'] = r.fetchSite
    if (r.body.contentType !== undefined) headers['content-type'] = r.body.contentType
    // An empty body still says how long it is (as clients do, and as the token endpoint requires).
    if (r.body.payload === '') headers['content-length'] = '0'
    return { method: r.method, url: `${r.path}${r.query}`, headers, payload: r.body.payload, remoteAddress: r.remoteAddress }
  })
}
