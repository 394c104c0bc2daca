import { randomBytes } from 'node:crypto'
import { startSession } from '../../src/accounts/sessions/sessions.js'
import type { Db } from '../../src/db/connect.js'
import { SESSION_COOKIE } from '../../src/http/session.js'
import { computeS256Challenge } from '../../src/oauth/token/pkce.js'
import { upsertGrant } from '../../src/repositories/grants.js'
import { type ApplicationFixture, basicAuth, createApplication, createUser } from './factories.js'

/*
 * The OAuth traffic of a real deployment, over real HTTP, against Gatehouse processes: a
 * logged-in user whose consent is remembered gets a code from GET /oauth/authorize (PKCE, S256),
 * the client exchanges it, a resource server introspects the token, the client revokes it.
 * Every answer is kept (bodies only of failures), for tests that assert what a fault may and
 * may not produce.
 */

export interface FlowParty {
  client: ApplicationFixture & { redirectUri: string }
  /** A second application, which introspects as resource servers do. */
  resourceServer: ApplicationFixture
  userId: string
  /** The Cookie header of the user's console session. */
  cookie: string
}

const SCOPE = 'read'
const REDIRECT_URI = 'https://client.example/cb'
const VERIFIER = 'fault-suite-code-verifier-0123456789-abcdefghijklmnop'
const CHALLENGE = computeS256Challenge(VERIFIER)

/**
 * Rows through Gatehouse's own code, as the existing tests and the benchmark seed them: a user
 * with a live session (startSession) who has consented to the client (upsertGrant), so that
 * authorize answers with a redirect carrying a code.
 */
export async function seedFlowParty(db: Db): Promise<FlowParty> {
  const now = new Date()
  const user = await createUser(db)
  const client = await createApplication(db, { ownerId: user.id, redirectUris: [REDIRECT_URI] })
  const resourceServer = await createApplication(db, { name: 'Resource server', resourceServer: true })
  await upsertGrant(db, { userId: user.id, applicationId: client.id, scopes: [SCOPE], resources: null, now })
  const session = await startSession(db, user.id, now, 24 * 3600_000)
  return { client: { ...client, redirectUri: REDIRECT_URI }, resourceServer, userId: user.id, cookie: `${SESSION_COOKIE}=${session}` }
}

export type Kind = 'authorize' | 'token' | 'introspect' | 'revoke' | 'token-info' | 'page'

export interface Reply {
  kind: Kind
  base: string
  /** 0: no HTTP answer at all (connection refused or reset: the process is gone). */
  status: number
  retryAfter: string | null
  contentType: string
  location: string | null
  /** The body; kept only for answers that are not 2xx/3xx, and only its start. */
  body: string
  /** performance.now() when the request was sent and when its answer was read. */
  started: number
  ended: number
}

async function call(kind: Kind, base: string, path: string, init: RequestInit = {}): Promise<Reply & { json?: unknown }> {
  const started = performance.now()
  try {
    const res = await fetch(`${base}${path}`, { redirect: 'manual', ...init })
    const text = await res.text()
    const contentType = res.headers.get('content-type') ?? ''
    let json: unknown
    if (contentType.startsWith('application/json')) json = JSON.parse(text)
    return {
      kind,
      base,
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      contentType,
      location: res.headers.get('location'),
      body: res.status >= 400 ? text.slice(0, 300) : '',
      started,
      ended: performance.now(),
      json,
    }
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause
    const body = `${(err as Error).message}: ${cause?.code ?? cause?.message ?? ''}`
    return { kind, base, status: 0, retryAfter: null, contentType: '', location: null, body, started, ended: performance.now() }
  }
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString()
const post = (authorization: string, body: string): RequestInit => ({
  method: 'POST',
  headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' },
  body,
})

/** GET /oauth/authorize with the user's session and remembered consent: a 302 with a code. */
export const authorize = (base: string, p: FlowParty) =>
  call(
    'authorize',
    base,
    `/oauth/authorize?${form({
      response_type: 'code',
      client_id: p.client.clientId,
      redirect_uri: p.client.redirectUri,
      scope: SCOPE,
      state: randomBytes(6).toString('hex'),
      code_challenge: CHALLENGE,
      code_challenge_method: 'S256',
    })}`,
    { headers: { cookie: p.cookie } },
  )

/** The code of an authorize answer, if it carries one. */
export function codeOf(reply: Reply): string | undefined {
  if (reply.status !== 302 || !reply.location) return undefined
  return new URL(reply.location).searchParams.get('code') ?? undefined
}

/** POST /oauth/token, authorization_code grant, client authenticated with Basic. */
export async function exchange(base: string, p: FlowParty, code: string) {
  const reply = await call(
    'token',
    base,
    '/oauth/token',
    post(
      basicAuth(p.client.clientId, p.client.clientSecret),
      form({ grant_type: 'authorization_code', code, redirect_uri: p.client.redirectUri, code_verifier: VERIFIER }),
    ),
  )
  const json = reply.json as { access_token?: string; error?: string } | undefined
  return { ...reply, token: reply.status === 200 ? json?.access_token : undefined, error: json?.error }
}

/** POST /oauth/introspect as the resource server; `active` only for a 200. */
export async function introspect(base: string, p: FlowParty, token: string) {
  const reply = await call(
    'introspect',
    base,
    '/oauth/introspect',
    post(basicAuth(p.resourceServer.clientId, p.resourceServer.clientSecret), form({ token })),
  )
  const json = reply.json as { active?: boolean; error?: string } | undefined
  return { ...reply, active: reply.status === 200 ? json?.active : undefined, error: json?.error }
}

/** POST /oauth/revoke as the client the token was issued to. */
export async function revoke(base: string, p: FlowParty, token: string) {
  const reply = await call('revoke', base, '/oauth/revoke', post(basicAuth(p.client.clientId, p.client.clientSecret), form({ token })))
  return { ...reply, error: (reply.json as { error?: string } | undefined)?.error }
}

export const tokenInfo = (base: string, token: string) =>
  call('token-info', base, '/oauth/token/info', { headers: { authorization: `Bearer ${token}` } })

/** A page of the console, as the logged-in user. */
export const page = (base: string, p: FlowParty, path: string) => call('page', base, path, { headers: { cookie: p.cookie } })

/** One whole flow that must succeed: authorize → code → token (active) → revoke → inactive. Throws on the first wrong answer. */
export async function completeFlow(base: string, p: FlowParty): Promise<void> {
  const fail = (step: string, r: Reply) => new Error(`${step} via ${base} answered ${r.status} ${r.body}`)
  const a = await authorize(base, p)
  const code = codeOf(a)
  if (!code) throw fail('GET /oauth/authorize', a)
  const t = await exchange(base, p, code)
  if (!t.token) throw fail('POST /oauth/token', t)
  const before = await introspect(base, p, t.token)
  if (before.active !== true) throw fail('POST /oauth/introspect (fresh token)', before)
  const r = await revoke(base, p, t.token)
  if (r.status !== 200) throw fail('POST /oauth/revoke', r)
  const after = await introspect(base, p, t.token)
  if (after.active !== false) throw fail('POST /oauth/introspect (revoked token)', after)
}

export interface LoadOptions {
  /** Concurrent keep-alive loops, spread over the bases in turn. */
  loops: number
  /** Revoke every n-th token (per loop); 1 revokes all, 0 none. */
  revokeEvery?: number
  /** Introspect each token after it is issued (default true). */
  introspect?: boolean
  /** How long a loop waits after an answer that carries no code or token (503, 4xx), default 25 ms. */
  pauseMs?: number
}

export interface Load {
  /** Every answer, in the order they were read. */
  readonly replies: Reply[]
  /** Codes whose exchange answered 200, with the token it gave. */
  readonly issued: { code: string; token: string; base: string }[]
  /** Tokens whose revocation answered 200. */
  readonly revoked: Set<string>
  /** Tokens whose revocation was sent, answered or not: one cut off may have happened or not. */
  readonly revocationSent: Set<string>
  /** Flows in which every request succeeded. */
  flows(): number
  /** Requests sent and not yet answered. */
  inFlight(): number
  /** Loops still running (a loop ends when a request gets no HTTP answer at all). */
  running(): number
  /** Ends the loops after their current request; resolves once they have. */
  stop(): Promise<void>
}

/** Runs `loops` flows back to back until stopped, or until a request gets no answer at all. */
export function startLoad(bases: string[], p: FlowParty, options: LoadOptions): Load {
  const { loops, revokeEvery = 1, introspect: check = true, pauseMs = 25 } = options
  const replies: Reply[] = []
  const issued: Load['issued'] = []
  const revoked = new Set<string>()
  const revocationSent = new Set<string>()
  let flows = 0
  let inFlight = 0
  let running = 0
  let stopped = false
  const pause = () => new Promise((resolve) => setTimeout(resolve, pauseMs))
  // Recorded as a plain Reply; undefined when the loop must end (no answer at all).
  async function track<R extends Reply>(request: Promise<R>): Promise<R | undefined> {
    inFlight++
    const reply = await request
    inFlight--
    const { kind, base, status, retryAfter, contentType, location, body, started, ended } = reply
    replies.push({ kind, base, status, retryAfter, contentType, location, body, started, ended })
    return status === 0 ? undefined : reply
  }

  async function loop(base: string): Promise<void> {
    running++
    try {
      for (let n = 1; !stopped; n++) {
        const a = await track(authorize(base, p))
        if (!a) return
        const code = codeOf(a)
        if (!code) {
          await pause()
          continue
        }
        const t = await track(exchange(base, p, code))
        if (!t) return
        if (!t.token) {
          await pause()
          continue
        }
        issued.push({ code, token: t.token, base })
        let ok = true
        if (check) {
          const i = await track(introspect(base, p, t.token))
          if (!i) return
          ok &&= i.active === true
        }
        if (revokeEvery > 0 && n % revokeEvery === 0) {
          revocationSent.add(t.token)
          const r = await track(revoke(base, p, t.token))
          if (!r) return
          if (r.status === 200) revoked.add(t.token)
          ok &&= r.status === 200
        }
        if (ok) flows++
        else await pause()
      }
    } finally {
      running--
    }
  }

  const all = Promise.all(Array.from({ length: loops }, (_, i) => loop(bases[i % bases.length]!)))
  return {
    replies,
    issued,
    revoked,
    revocationSent,
    flows: () => flows,
    inFlight: () => inFlight,
    running: () => running,
    async stop() {
      stopped = true
      await all
    },
  }
}

/** Counts of answers by kind and status, e.g. `{ 'token 200': 812, 'token 503': 3 }`. */
export function tally(replies: readonly Reply[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const r of replies) counts[`${r.kind} ${r.status}`] = (counts[`${r.kind} ${r.status}`] ?? 0) + 1
  return counts
}

/** Answers a fault may never produce: none at all, a 5xx other than 503, or a 503 without Retry-After. */
export function forbidden(replies: readonly Reply[]): Reply[] {
  return replies.filter((r) => r.status === 0 || (r.status >= 500 && r.status !== 503) || (r.status === 503 && !r.retryAfter))
}

/** Resolves once `check` holds, polling every `intervalMs`; throws `what` after `timeoutMs`. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string, intervalMs = 10): Promise<number> {
  const since = performance.now()
  for (;;) {
    if (await check()) return performance.now() - since
    if (performance.now() - since > timeoutMs) throw new Error(`not within ${timeoutMs} ms: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}
