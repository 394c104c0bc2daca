import { sha256Hex } from '../../../src/lib/crypto.js'
import { randomBytes } from 'node:crypto'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { expect } from 'vitest'
import type { Db } from '../../../src/db/connect.js'
import { generateClientId, generateClientSecret } from '../../../src/lib/tokens.js'
import { computeS256Challenge } from '../../../src/oauth/token/pkce.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { TEST_ISSUER, buildTestApp, type TestContext } from '../../helpers/app.js'

export { TEST_ISSUER }

/** buildTestApp with a log-in limit out of the way: every test signs up from one address. */
export function buildOAuthTestApp(env: Record<string, string> = {}): Promise<TestContext> {
  return buildTestApp({ LOGIN_RATE_LIMIT: '10000', ...env })
}

export interface TestClient {
  id: string
  clientId: string
  clientSecret: string
  redirectUri: string
}

let userCounter = 0
/** A fresh user, logged in through the real pages. */
export async function loggedInUser(app: FastifyInstance, email?: string): Promise<BrowserSession & { email: string }> {
  const address = email ?? `user${++userCounter}-${randomBytes(3).toString('hex')}@example.com`
  const s = await new BrowserSession(app).signUpAndLogIn(address)
  return Object.assign(s, { email: address })
}

/** Inserts an application owned by a new user; a factory, so tests do not depend on the console. */
export async function createClient(
  db: Db,
  opts: {
    redirectUris?: string[]
    scopes?: string[]
    requirePkce?: boolean
    allowImplicit?: boolean
    name?: string
    /** A native or single-page app has no secret (clientSecret is then ''). */
    kind?: 'web' | 'native' | 'spa' | 'machine'
  } = {},
): Promise<TestClient> {
  const owner = await db
    .insertInto('users')
    .values({ email: `owner-${randomBytes(4).toString('hex')}@example.com`, password_hash: 'x', created_at: new Date() })
    .returning('id')
    .executeTakeFirstOrThrow()
  const clientId = generateClientId()
  const kind = opts.kind ?? 'web'
  const isPublic = kind === 'native' || kind === 'spa'
  const clientSecret = isPublic ? '' : generateClientSecret()
  const redirectUris = opts.redirectUris ?? ['https://client.example/cb']
  const row = await db
    .insertInto('applications')
    .values({
      client_id: clientId,
      kind,
      secret_hash: isPublic ? null : sha256Hex(clientSecret),
      owner_id: owner.id,
      name: opts.name ?? 'Team Planner',
      redirect_uris: redirectUris,
      allowed_scopes: opts.scopes ?? ['read', 'write', 'write_members', 'write_teams', 'write_events', 'write_users'],
      require_pkce: opts.requirePkce ?? false,
      allow_implicit: opts.allowImplicit ?? false,
      created_at: new Date(),
      updated_at: new Date(),
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  return { id: row.id, clientId, clientSecret, redirectUri: redirectUris[0]! }
}

export function authorizeUrl(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.append(k, v)
  return `/oauth/authorize?${q}`
}

/** The hidden fields of the page's form that posts to `action` (entities decoded), as a browser would send them. */
export function hiddenFields(html: string, action: string): Record<string, string> {
  const form = new RegExp(`<form method="post" action="${action}">([\\s\\S]*?)</form>`).exec(html)?.[1]
  if (!form) throw new Error(`no form posting to ${action} in: ${html.slice(0, 400)}`)
  const fields: Record<string, string> = {}
  for (const m of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[m[1]!] = m[2]!
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&amp;/g, '&')
  }
  return fields
}

/** Hidden fields of the consent form, as the browser would send them back. */
export function consentFields(html: string): Record<string, string> {
  return hiddenFields(html, '/oauth/authorize')
}

export function locationParams(res: LightMyRequestResponse, mode: 'query' | 'fragment' = 'query'): URLSearchParams {
  const location = String(res.headers.location)
  const url = new URL(location)
  return new URLSearchParams(mode === 'query' ? url.search : url.hash.slice(1))
}

export const VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'
export const CHALLENGE = computeS256Challenge(VERIFIER)

/** Runs authorize + consent for `client` and returns the code from the redirect. */
export async function obtainCode(s: BrowserSession, client: TestClient, extra: Record<string, string | undefined> = {}): Promise<string> {
  const page = await s.get(authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: client.redirectUri, ...extra }))
  let res = page
  if (page.statusCode === 200) res = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
  expect([302, 303], res.body.slice(0, 300)).toContain(res.statusCode)
  const code = locationParams(res).get('code')
  if (!code) throw new Error(`no code in ${res.headers.location}`)
  return code
}

export function exchange(
  app: FastifyInstance,
  client: TestClient,
  fields: Record<string, string | undefined>,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  const body = new URLSearchParams()
  const all = {
    grant_type: 'authorization_code',
    client_id: client.clientId,
    client_secret: client.clientSecret,
    redirect_uri: client.redirectUri,
    ...fields,
  }
  for (const [k, v] of Object.entries(all)) if (v !== undefined) body.append(k, v)
  return app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: body.toString(),
  })
}

export function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`
}

/** RFC 6749 4.1.2.1, 4.2.2.1, 5.2: error_description = 1*( %x20-21 / %x23-5B / %x5D-7E ). */
export const RFC_6749_DESCRIPTION = /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/

export function expectOAuthError(res: LightMyRequestResponse, error: string, status = 400): void {
  expect(res.statusCode, res.body).toBe(status)
  expect(res.headers['content-type']).toMatch(/^application\/json/)
  expect(res.json()).toMatchObject({ error, error_description: expect.stringMatching(RFC_6749_DESCRIPTION) })
  expect(res.headers['cache-control']).toBe('no-store')
}

export async function tokenRow(db: Db, token: string) {
  return db.selectFrom('access_tokens').selectAll().where('token_hash', '=', sha256Hex(token)).executeTakeFirst()
}

/** Records that the user (by email) once consented to the application: what makes its redirects trusted. */
export async function grantAccess(db: Db, email: string, applicationId: string, scopes: string[] = ['read']): Promise<void> {
  const user = await db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()
  const now = new Date()
  await db
    .insertInto('grants')
    .values({ user_id: user.id, application_id: applicationId, scopes, created_at: now, updated_at: now })
    .onConflict((oc) => oc.constraint('grants_user_application_key').doNothing())
    .execute()
}

/** The "Return to <host>" link of the page shown instead of redirecting an error to an untrusted client. */
export function returnLink(html: string): { href: string; text: string } | undefined {
  const m = /<a href="([^"]+)">(Return to [^<]+)<\/a>/.exec(html)
  return m
    ? {
        href: m[1]!
          .replace(/&amp;/g, '&')
          .replace(/&#39;/g, "'")
          .replace(/&quot;/g, '"'),
        text: m[2]!,
      }
    : undefined
}
