import type { FastifyInstance } from 'fastify'
import { expect } from 'vitest'
import {
  type TestClient,
  authorizeUrl,
  buildOAuthTestApp,
  consentFields,
  createClient,
  exchange,
  loggedInUser,
  obtainCode,
} from '../integration/oauth/helpers.js'
import { type TestContext, buildTestApp } from './app.js'
import { type ApplicationFixture, createApplication } from './factories.js'
import type { BrowserSession } from './browser-session.js'
import { fileSetUp } from './file-set-up.js'

/**
 * An OAuth test file's app (buildOAuthTestApp, `env` added to its configuration), built in its
 * beforeAll and closed in its afterAll (test/helpers/file-set-up.ts).
 */
export function oauthTestFile(env: Record<string, string> = {}): { t: TestContext } {
  return fileSetUp<{ t: TestContext }>(
    async (parts) => {
      parts.t = await buildOAuthTestApp(env)
    },
    async (parts) => parts.t?.close(),
  )
}

/**
 * An OAuth test file's app and one client registered by factory (createClient, with `client`'s
 * options), built in its beforeAll and closed in its afterAll.
 */
export function oauthClientTestFile(client: Parameters<typeof createClient>[1] = {}): { t: TestContext; client: TestClient } {
  return fileSetUp<{ t: TestContext; client: TestClient }>(
    async (parts) => {
      parts.t = await buildOAuthTestApp()
      parts.client = await createClient(parts.t.db, client)
    },
    async (parts) => parts.t?.close(),
  )
}

export interface TokenEndpointSetUp {
  t: TestContext
  /** Signed up and logged in through the real pages, before `client` exists. */
  user: BrowserSession & { email: string }
  /** Registered by factory (createClient), with `client`'s options. */
  client: TestClient
}

/**
 * The token endpoint tests' fixtures, for a whole file: an OAuth test app (`env` added to its
 * configuration), a user logged in on it, and a client to obtain codes for and exchange them.
 */
export function tokenEndpointTestFile(
  options: { env?: Record<string, string>; client?: Parameters<typeof createClient>[1] } = {},
): TokenEndpointSetUp {
  return fileSetUp<TokenEndpointSetUp>(
    async (parts) => {
      parts.t = await buildOAuthTestApp(options.env)
      parts.user = await loggedInUser(parts.t.app)
      parts.client = await createClient(parts.t.db, options.client)
    },
    async (parts) => parts.t?.close(),
  )
}

/**
 * A fresh user, logged in, who has approved `client` on the consent page (RFC 6749 4.1.1) for
 * the authorization request `params` adds to response_type=code and client_id: from then on
 * the client's requests within that consent are answered with a redirect.
 */
export async function consentedUser(
  app: FastifyInstance,
  client: TestClient,
  params: Record<string, string>,
): Promise<BrowserSession & { email: string }> {
  const s = await loggedInUser(app)
  const page = await s.get(authorizeUrl({ response_type: 'code', client_id: client.clientId, ...params }))
  expect(page.statusCode).toBe(200)
  const res = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
  expect(res.statusCode).toBe(303)
  return s
}

export interface TwoInstancesSetUp {
  t: TestContext
  /** A second Gatehouse instance on `t`'s database: it hears of revocations through LISTEN/NOTIFY. */
  b: TestContext
  /** An application marked as a resource server, to introspect tokens on either instance. */
  rs: ApplicationFixture
}

/**
 * The operator tests' two Gatehouse instances on one database and a resource server to ask
 * either about a token, for a whole file; the file's own beforeAll, which runs after this one,
 * adds its users and applications.
 */
export function twoInstancesTestFile(): TwoInstancesSetUp {
  return fileSetUp<TwoInstancesSetUp>(
    async (parts) => {
      parts.t = await buildOAuthTestApp()
      parts.b = await buildTestApp({ LOGIN_RATE_LIMIT: '10000' }, parts.t.testDb)
      parts.rs = await createApplication(parts.t.db, { name: 'Resource server', resourceServer: true })
    },
    async (parts) => {
      await parts.b?.close()
      await parts.t?.close()
    },
  )
}

/** An access token for `client` through `user`'s session: a code for `read` obtained and exchanged, which must succeed. */
export async function readTokenFor(t: TestContext, user: BrowserSession, client: TestClient): Promise<string> {
  const res = await exchange(t.app, client, { code: await obtainCode(user, client, { scope: 'read' }) })
  expect(res.statusCode, res.body).toBe(200)
  return res.json<{ access_token: string }>().access_token
}
