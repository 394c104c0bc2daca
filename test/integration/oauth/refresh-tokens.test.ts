import * as client from 'openid-client'
import type { LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sessionSid } from '../../../src/accounts/sessions/end-sessions.js'
import { sha256Hex } from '../../../src/lib/crypto.js'
import { revoke } from '../../../src/revocation/revoke.js'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { listenOnLoopback } from '../../helpers/loopback.js'
import { linkTo } from '../../helpers/mailbox.js'
import { signInWithOpenIdClient } from '../../helpers/oidc-sign-in.js'
import { enrolTotp } from '../../helpers/totp.js'
import { CHALLENGE, VERIFIER, type TestClient, basic, createClient, exchange, expectOAuthError, obtainCode, tokenRow } from './helpers.js'

/*
 * Expiring access tokens with rotating refresh tokens (RFC 6749 §6, RFC 9700 §4.14.2;
 * docs/expiring-tokens.md): openid-client's refresh grant against a listening server, rotation,
 * the grace window, reuse ending the family, narrowing, expiry by the injected clock, revocation,
 * and an application without lifetimes exactly as before.
 */

let t: TestContext
let issuer: URL
let web: TestClient
let native: TestClient
let other: TestClient
let plain: TestClient
const LOOPBACK = 'http://127.0.0.1:53684/callback'
const HOUR = 3600
const DAY = 86_400

async function withLifetimes(c: TestClient, access = HOUR, refresh = 30 * DAY): Promise<TestClient> {
  await t.db
    .updateTable('applications')
    .set({ access_token_ttl_seconds: access, refresh_token_ttl_seconds: refresh })
    .where('id', '=', c.id)
    .execute()
  return c
}

beforeAll(async () => {
  const listening = await listenOnLoopback((env) => buildTestApp({ LOGIN_RATE_LIMIT: '10000', ...env }))
  t = listening.t
  issuer = new URL(listening.baseUrl)
  const scopes = ['openid', 'email', 'read', 'write']
  web = await withLifetimes(await createClient(t.db, { redirectUris: [LOOPBACK], scopes }))
  native = await withLifetimes(await createClient(t.db, { kind: 'native', redirectUris: [LOOPBACK], scopes }))
  other = await withLifetimes(await createClient(t.db, { redirectUris: [LOOPBACK], scopes }))
  plain = await createClient(t.db, { redirectUris: [LOOPBACK], scopes })
})
afterAll(async () => {
  await t.close()
})

function post(url: string, fields: Record<string, string | undefined>, c?: TestClient): Promise<LightMyRequestResponse> {
  const body = new URLSearchParams()
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) body.append(k, v)
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' }
  if (c && c.clientSecret !== '') headers.authorization = basic(c.clientId, c.clientSecret)
  else if (c) body.append('client_id', c.clientId)
  return t.app.inject({ method: 'POST', url, headers, payload: body.toString() })
}

const refresh = (c: TestClient, refreshToken: string, extra: Record<string, string> = {}) =>
  post('/oauth/token', { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra }, c)

/** A code flow for `c` by a fresh user; the token response's body. */
async function codeFlow(
  c: TestClient,
  scope = 'read write',
): Promise<Record<string, unknown> & { access_token: string; refresh_token?: string }> {
  const s = await new BrowserSession(t.app).signUpAndLogIn(`refresh-${crypto.randomUUID()}@example.com`)
  const pkce = { code_challenge: CHALLENGE, code_challenge_method: 'S256' }
  const code = await obtainCode(s, c, { scope, ...pkce })
  const res = await exchange(t.app, c, { code, code_verifier: VERIFIER, client_secret: c.clientSecret || undefined })
  expect(res.statusCode, res.body).toBe(200)
  return res.json()
}

async function introspected(c: TestClient, token: string): Promise<boolean> {
  const res = await post('/oauth/introspect', { token }, c)
  expect(res.statusCode, res.body).toBe(200)
  return res.json().active as boolean
}

const family = async (refreshToken: string) =>
  t.db
    .selectFrom('refresh_tokens as r')
    .innerJoin('refresh_token_families as f', 'f.id', 'r.family_id')
    .select(['r.retired_at', 'r.expires_at', 'f.id', 'f.revoked_at', 'f.expires_at as family_expires_at', 'f.sid', 'f.dpop_jkt'])
    .where('r.token_hash', '=', sha256Hex(refreshToken))
    .executeTakeFirstOrThrow()

describe('openid-client and an application with lifetimes', () => {
  it('gets expires_in and a refresh token, refreshes to a new pair, and the old refresh token is retired', async () => {
    const config = await client.discovery(issuer, web.clientId, web.clientSecret, undefined, { execute: [client.allowInsecureRequests] })
    expect(config.serverMetadata().grant_types_supported).toContain('refresh_token')
    const browser = await new BrowserSession(t.app).signUpAndLogIn(`rp-${crypto.randomUUID()}@example.com`)
    const { tokens } = await signInWithOpenIdClient(config, browser, { redirectUri: LOOPBACK, scope: 'openid email read' })
    expect(tokens.expires_in).toBe(HOUR)
    expect(tokens.refresh_token).toMatch(/^grt_[A-Za-z0-9_-]{49}$/)
    const first = await family(tokens.refresh_token!)
    expect(first.sid).not.toBeNull()
    expect((await tokenRow(t.db, tokens.access_token))?.refresh_family_id).toBe(first.id)

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!)
    expect(refreshed.access_token).not.toBe(tokens.access_token)
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
    expect(refreshed.expires_in).toBe(HOUR)
    expect(refreshed.scope).toBe('openid email read')
    expect((await family(tokens.refresh_token!)).retired_at).not.toBeNull()
    expect((await family(refreshed.refresh_token!)).retired_at).toBeNull()
    expect(await introspected(web, refreshed.access_token)).toBe(true)
    // The refresh token is stored as its digest only.
    const stored = await t.db.selectFrom('refresh_tokens').select('token_hash').execute()
    expect(stored.map((r) => r.token_hash)).not.toContain(refreshed.refresh_token)
  })

  it('a public client refreshes with client_id alone, and rotates', async () => {
    const config = await client.discovery(issuer, native.clientId, undefined, client.None(), { execute: [client.allowInsecureRequests] })
    const browser = await new BrowserSession(t.app).signUpAndLogIn(`native-${crypto.randomUUID()}@example.com`)
    const { tokens } = await signInWithOpenIdClient(config, browser, { redirectUri: LOOPBACK, scope: 'openid read' })
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!)
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
    const again = await client.refreshTokenGrant(config, refreshed.refresh_token!)
    expect(again.access_token).toMatch(/^gat_/)
  })

  it('narrows the scope, and refuses to widen it with invalid_scope', async () => {
    const config = await client.discovery(issuer, web.clientId, web.clientSecret, undefined, { execute: [client.allowInsecureRequests] })
    const issued = await codeFlow(web, 'read')
    const widened = await client.refreshTokenGrant(config, issued.refresh_token!, { scope: 'read write' }).catch((e: unknown) => e)
    expect(widened).toMatchObject({ error: 'invalid_scope', status: 400 })
    // The refusal spent nothing.
    expect((await family(issued.refresh_token!)).retired_at).toBeNull()
    const both = await codeFlow(web, 'read write')
    const narrowed = await client.refreshTokenGrant(config, both.refresh_token!, { scope: 'read' })
    expect(narrowed.scope).toBe('read')
    // The family keeps what was granted: the next refresh may ask for all of it again.
    const full = await client.refreshTokenGrant(config, narrowed.refresh_token!)
    expect(full.scope).toBe('read write')
  })
})

describe('reuse and the grace window', () => {
  it('inside the window: the retired token gets a pair once more, and its unused successor dies', async () => {
    const issued = await codeFlow(web)
    const lost = (await refresh(web, issued.refresh_token!)).json()
    t.clock.advance(5_000)
    const retry = await refresh(web, issued.refresh_token!)
    expect(retry.statusCode, retry.body).toBe(200)
    expect((await family(lost.refresh_token)).retired_at).not.toBeNull()
    const fresh = retry.json()
    expect((await refresh(web, fresh.refresh_token)).statusCode).toBe(200)
    // The successor that was lost is spent: presenting it is reuse, and so is the first token a third time.
    expectOAuthError(await refresh(web, lost.refresh_token), 'invalid_grant')
    expect((await family(issued.refresh_token!)).revoked_at).not.toBeNull()
  })

  it('REFRESH_TOKEN_REUSE_GRACE_SECONDS=0: no second chance', async () => {
    const strict = await buildTestApp({ REFRESH_TOKEN_REUSE_GRACE_SECONDS: '0' })
    try {
      const saved = t
      t = strict
      try {
        const c = await withLifetimes(await createClient(t.db, { scopes: ['read'] }))
        const issued = await codeFlow(c, 'read')
        expect((await refresh(c, issued.refresh_token!)).statusCode).toBe(200)
        expectOAuthError(await refresh(c, issued.refresh_token!), 'invalid_grant')
        expect((await family(issued.refresh_token!)).revoked_at).not.toBeNull()
      } finally {
        t = saved
      }
    } finally {
      await strict.close()
    }
  })

  it('once the successor was used, the retired token is reuse even inside the window: the family and its access tokens end', async () => {
    const issued = await codeFlow(web)
    const next = (await refresh(web, issued.refresh_token!)).json()
    const used = (await refresh(web, next.refresh_token)).json()
    const reused = await refresh(web, issued.refresh_token!)
    expectOAuthError(reused, 'invalid_grant')
    expect((await family(issued.refresh_token!)).revoked_at).not.toBeNull()
    for (const token of [issued.access_token, next.access_token, used.access_token]) expect(await introspected(web, token)).toBe(false)
    expectOAuthError(await refresh(web, used.refresh_token), 'invalid_grant')
    const audited = await t.db.selectFrom('audit_events').select('event').where('event', '=', 'refresh_token.reused').execute()
    expect(audited.length).toBeGreaterThan(0)
  })

  it('after the window: reuse revokes the family and its access tokens (introspection inactive)', async () => {
    const issued = await codeFlow(web)
    const next = (await refresh(web, issued.refresh_token!)).json()
    t.clock.advance(11_000)
    expectOAuthError(await refresh(web, issued.refresh_token!), 'invalid_grant')
    expect(await introspected(web, next.access_token)).toBe(false)
    expect(await introspected(web, issued.access_token)).toBe(false)
    expectOAuthError(await refresh(web, next.refresh_token), 'invalid_grant')
  })
})

describe('expiry by the injected clock', () => {
  it('the access token expires after its lifetime: introspection inactive, token info refuses', async () => {
    const issued = await codeFlow(other)
    expect(await introspected(other, issued.access_token)).toBe(true)
    t.clock.advance(HOUR * 1000 + 1000)
    expect(await introspected(other, issued.access_token)).toBe(false)
    const info = await t.app.inject({
      method: 'GET',
      url: '/oauth/token/info',
      headers: { authorization: `Bearer ${issued.access_token}` },
    })
    expect(info.statusCode).toBe(401)
    // The refresh token still works, and answers a live one.
    const next = (await refresh(other, issued.refresh_token!)).json()
    expect(await introspected(other, next.access_token)).toBe(true)
  })

  it('the refresh token expires after its lifetime', async () => {
    const issued = await codeFlow(other)
    t.clock.advance(30 * DAY * 1000 + 1000)
    const res = await refresh(other, issued.refresh_token!)
    expectOAuthError(res, 'invalid_grant')
    expect(res.json().error_description).toMatch(/expired/)
  })

  it('the family ends at REFRESH_TOKEN_FAMILY_MAX_DAYS, however often it rotated', async () => {
    let current = (await codeFlow(other)).refresh_token!
    const end = (await family(current)).family_expires_at.getTime()
    while (t.clock().getTime() + 29 * DAY * 1000 < end) {
      t.clock.advance(29 * DAY * 1000)
      const res = await refresh(other, current)
      expect(res.statusCode, res.body).toBe(200)
      current = res.json().refresh_token
      // Refresh tokens never outlive their family.
      expect((await family(current)).expires_at.getTime()).toBeLessThanOrEqual(end)
    }
    t.clock.set(new Date(end + 1000))
    const res = await refresh(other, current)
    expectOAuthError(res, 'invalid_grant')
  })
})

describe('whose refresh token', () => {
  it("another client's refresh token is invalid_grant, and its family lives on", async () => {
    const issued = await codeFlow(web)
    expectOAuthError(await refresh(other, issued.refresh_token!), 'invalid_grant')
    expect((await refresh(web, issued.refresh_token!)).statusCode).toBe(200)
  })

  it('an access token, garbage, or a wrong secret', async () => {
    const issued = await codeFlow(web)
    expectOAuthError(await refresh(web, issued.access_token), 'invalid_grant')
    expectOAuthError(await refresh(web, 'grt_nothing'), 'invalid_grant')
    expectOAuthError(await refresh({ ...web, clientSecret: 'wrong' }, issued.refresh_token!), 'invalid_client', 401)
    expectOAuthError(await post('/oauth/token', { grant_type: 'refresh_token' }, web), 'invalid_request')
  })
})

describe('revocation', () => {
  it('POST /oauth/revoke with a refresh token ends its family and the family’s access tokens', async () => {
    for (const hint of [undefined, 'refresh_token']) {
      const issued = await codeFlow(web)
      const next = (await refresh(web, issued.refresh_token!)).json()
      const res = await post('/oauth/revoke', { token: next.refresh_token, token_type_hint: hint }, web)
      expect(res.statusCode).toBe(200)
      expect(await introspected(web, next.access_token)).toBe(false)
      expectOAuthError(await refresh(web, next.refresh_token), 'invalid_grant')
    }
  })

  it('revoking an access token of a family ends only that access token', async () => {
    const issued = await codeFlow(web)
    expect((await post('/oauth/revoke', { token: issued.access_token }, web)).statusCode).toBe(200)
    expect(await introspected(web, issued.access_token)).toBe(false)
    expect((await refresh(web, issued.refresh_token!)).statusCode).toBe(200)
  })

  it("another client's refresh token is refused and stays", async () => {
    const issued = await codeFlow(web)
    expectOAuthError(await post('/oauth/revoke', { token: issued.refresh_token }, other), 'unauthorized_client')
    expect((await refresh(web, issued.refresh_token!)).statusCode).toBe(200)
  })

  it('"Revoke access" ends the families', async () => {
    const issued = await codeFlow(web)
    const { user_id } = (await tokenRow(t.db, issued.access_token))!
    await revoke(t.revocation, { kind: 'access-revoked', userId: user_id!, applicationId: web.id }, t.clock())
    expect((await family(issued.refresh_token!)).revoked_at).not.toBeNull()
    expectOAuthError(await refresh(web, issued.refresh_token!), 'invalid_grant')
  })

  it('logging out of the session that approved ends the families it started', async () => {
    const s = await new BrowserSession(t.app).signUpAndLogIn(`logout-${crypto.randomUUID()}@example.com`)
    const code = await obtainCode(s, web, { scope: 'openid read', code_challenge: CHALLENGE, code_challenge_method: 'S256' })
    const issued = (await exchange(t.app, web, { code, code_verifier: VERIFIER })).json()
    expect((await family(issued.refresh_token)).sid).not.toBeNull()
    await s.post('/logout', {})
    expect((await family(issued.refresh_token)).revoked_at).not.toBeNull()
    expect(await introspected(web, issued.access_token)).toBe(false)
  })
})

/*
 * Every way an account's sessions are ended on purpose ends the families approved in them, as a
 * log-out does; the browser that ended the others keeps its own (docs/expiring-tokens.md
 * "Revocation"). Whoever shut an intruder out by changing the password shuts out the intruder's
 * applications too.
 */
describe('sessions ended on purpose', () => {
  const PASSWORD = 'correct horse battery'

  /** A refresh token of a family approved in `s`'s session. */
  async function approvedIn(s: BrowserSession): Promise<string> {
    const code = await obtainCode(s, web, { scope: 'openid read', code_challenge: CHALLENGE, code_challenge_method: 'S256' })
    const res = await exchange(t.app, web, { code, code_verifier: VERIFIER })
    expect(res.statusCode, res.body).toBe(200)
    const issued = res.json()
    expect((await family(issued.refresh_token)).sid).not.toBeNull()
    return issued.refresh_token
  }

  /** One account logged in in two browsers, each with a family it approved: `kept` acts, `ended` is the other one. */
  async function twoBrowsers(label: string) {
    const email = `${label}-${crypto.randomUUID()}@example.com`
    const kept = await new BrowserSession(t.app).signUpAndLogIn(email, PASSWORD)
    const ended = new BrowserSession(t.app)
    expect((await ended.logIn(email, PASSWORD)).statusCode).toBe(303)
    return { email, kept, ended, keptFamily: await approvedIn(kept), endedFamily: await approvedIn(ended) }
  }

  const userIdOf = async (email: string) =>
    (await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()).id
  const grantsOf = async (userId: string) =>
    (await t.db.selectFrom('grants').select('user_id').where('user_id', '=', userId).execute()).length

  /** An operator, logged in to the admin pages, confirms `action` on the user's page. */
  async function operatorActs(userId: string, action: 'reset-second-factor' | 'suspend') {
    const operator = `operator-${crypto.randomUUID()}@example.com`
    const op = await new BrowserSession(t.app).signUpAndLogIn(operator, PASSWORD)
    await t.db.updateTable('users').set({ is_operator: true }).where('email', '=', operator).execute()
    await op.get(`/admin/users/${userId}/${action}`)
    expect((await op.post(`/admin/users/${userId}/${action}`, {})).statusCode).toBe(303)
  }

  /** `s` changes the account's password on its Account page. */
  async function changePassword(s: BrowserSession) {
    await s.get('/account/password')
    const changed = await s.post('/account/password', { current_password: PASSWORD, new_password: 'a new passphrase' })
    expect(changed.headers.location).toBe('/account?password_changed=1')
  }

  async function expectEnded(refreshToken: string) {
    expect((await family(refreshToken)).revoked_at).not.toBeNull()
    expectOAuthError(await refresh(web, refreshToken), 'invalid_grant')
  }

  async function expectRefreshes(refreshToken: string) {
    const res = await refresh(web, refreshToken)
    expect(res.statusCode, res.body).toBe(200)
  }

  it('"Log out of all other sessions": the other sessions\' families end, this one\'s refreshes', async () => {
    const { kept, keptFamily, endedFamily } = await twoBrowsers('others')
    await kept.get('/account/sessions')
    expect((await kept.post('/account/sessions/others', {})).headers.location).toBe('/account?sessions_ended=1')
    await expectEnded(endedFamily)
    await expectRefreshes(keptFamily)
  })

  it("a password change: the other sessions' families end, the changing browser's refreshes", async () => {
    const { kept, keptFamily, endedFamily } = await twoBrowsers('password-change')
    await changePassword(kept)
    await expectEnded(endedFamily)
    await expectRefreshes(keptFamily)
  })

  it('a password change also ends the families of sessions that had already expired or been evicted', async () => {
    const { email, kept, keptFamily, endedFamily } = await twoBrowsers('gone-before')
    // The janitor's expiry, or the eviction beyond MAX_SESSIONS_PER_USER, leaves the family behind.
    const { sid } = await family(endedFamily)
    const sessions = await t.db
      .selectFrom('sessions')
      .select('id_hash')
      .where('user_id', '=', await userIdOf(email))
      .execute()
    const gone = sessions.map((r) => r.id_hash).filter((idHash) => sessionSid(idHash) === sid)
    expect(gone).toHaveLength(1)
    await t.db.deleteFrom('sessions').where('id_hash', '=', gone[0]!).execute()
    expect((await family(endedFamily)).revoked_at).toBeNull()
    await changePassword(kept)
    await expectEnded(endedFamily)
    await expectRefreshes(keptFamily)
  })

  it("a second factor added: the other sessions' families end, the enrolling browser's refreshes", async () => {
    const { kept, keptFamily, endedFamily } = await twoBrowsers('enrolment')
    await enrolTotp(kept, t.clock, PASSWORD)
    await expectEnded(endedFamily)
    await expectRefreshes(keptFamily)
  })

  it("a password reset by mailed link, without revoking every application's access: every session's families end", async () => {
    const { email, keptFamily, endedFamily } = await twoBrowsers('password-reset')
    const s = new BrowserSession(t.app)
    await s.get('/forgot-password')
    expect((await s.post('/forgot-password', { email })).statusCode).toBe(200)
    const link = linkTo(t.mailbox.last(email), '/reset-password')!
    await s.get(link)
    const token = new URL(link, 'http://x').searchParams.get('token')!
    // revoke_access left unchecked: only the sessions end, and the families approved in them.
    expect((await s.post('/reset-password', { token, password: 'a new passphrase' })).statusCode).toBe(303)
    expect(await grantsOf(await userIdOf(email))).toBe(1)
    await expectEnded(endedFamily)
    await expectEnded(keptFamily)
  })

  it("the operator's reset of the second factor: every session's families end, grants stay", async () => {
    const { email, keptFamily, endedFamily } = await twoBrowsers('operator-reset')
    const userId = await userIdOf(email)
    await operatorActs(userId, 'reset-second-factor')
    expect(await grantsOf(userId)).toBe(1)
    await expectEnded(endedFamily)
    await expectEnded(keptFamily)
  })

  it("the operator's suspension of the account: every session's families end", async () => {
    const { email, keptFamily, endedFamily } = await twoBrowsers('suspension')
    await operatorActs(await userIdOf(email), 'suspend')
    await expectEnded(endedFamily)
    await expectEnded(keptFamily)
  })
})

describe('an application without lifetimes', () => {
  it('behaves exactly as before: no expires_in, no refresh_token, no family', async () => {
    const issued = await codeFlow(plain)
    expect(Object.keys(issued).sort()).toEqual(['access_token', 'created_at', 'scope', 'token_type'])
    const row = await tokenRow(t.db, issued.access_token)
    expect(row).toMatchObject({ expires_at: null, refresh_family_id: null })
  })
})

describe('client credentials', () => {
  it('an access lifetime gives an expiring token and never a refresh token (RFC 6749 §4.4.3)', async () => {
    const machine = await withLifetimes(await createClient(t.db, { kind: 'machine', scopes: ['read'] }), 600, 3600)
    await t.db
      .updateTable('applications')
      .set({ client_credentials_scopes: ['read'] })
      .where('id', '=', machine.id)
      .execute()
    const res = await post('/oauth/token', { grant_type: 'client_credentials' }, machine)
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toMatchObject({ expires_in: 600 })
    expect(res.json()).not.toHaveProperty('refresh_token')
    t.clock.advance(601_000)
    expect(await introspected(machine, res.json().access_token)).toBe(false)
  })
})

describe('quotas', () => {
  it('live families count per grant like tokens: one beyond MAX_TOKENS_PER_GRANT ends the oldest', async () => {
    const s = await new BrowserSession(t.app).signUpAndLogIn(`quota-${crypto.randomUUID()}@example.com`)
    const pkce = { code_challenge: CHALLENGE, code_challenge_method: 'S256', scope: 'read' }
    const issued: string[] = []
    for (let i = 0; i < 11; i++) {
      t.clock.advance(1000)
      const code = await obtainCode(s, web, pkce)
      issued.push((await exchange(t.app, web, { code, code_verifier: VERIFIER })).json().refresh_token)
    }
    await t.deps.tokenQuota.settled()
    expect((await family(issued[0]!)).revoked_at).not.toBeNull()
    expect((await family(issued[1]!)).revoked_at).toBeNull()
    expect((await family(issued[10]!)).revoked_at).toBeNull()
  })
})
