import Fastify, { type FastifyInstance } from 'fastify'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Verifier, createVerifier, gatehouseVerifier, requireToken } from '@gatehouse/verifier'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { applicationForm } from '../../helpers/console.js'
import { createAccessToken } from '../../helpers/factories.js'
import {
  CHALLENGE,
  VERIFIER,
  type TestClient,
  authorizeUrl,
  buildOAuthTestApp,
  consentFields,
  createClient,
  exchange,
  locationParams,
  loggedInUser,
  obtainCode,
  returnLink,
  tokenRow,
} from './helpers.js'
import { runCliOn } from '../../helpers/cli.js'

/*
 * SCOPES_FILE (docs/operating/scopes.md): an API's own scopes drive discovery, the console,
 * consent, the token endpoint, Authorized Applications, the command line and the verifier; and a
 * later file never widens what was granted before (docs/decisions/018-operator-scopes.md). Runs
 * on PGlite and, with TEST_DATABASE_URL, on PostgreSQL.
 */

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-scopes-'))

function scopesFile(name: string, content: unknown): string {
  const path = join(dir, name)
  writeFileSync(path, JSON.stringify(content))
  return path
}

const INVOICES = {
  scopes: [
    { name: 'invoices:read', description: 'See your invoices' },
    { name: 'invoices:write', description: 'Create and change your invoices', implies: ['invoices:read'] },
    { name: 'invoices:delete', description: 'Delete your invoices' },
  ],
  default: ['invoices:read'],
}
const ALL = ['invoices:read', 'invoices:write', 'invoices:delete']
const FIRST = scopesFile('first.json', INVOICES)

let t: TestContext
let client: TestClient

beforeAll(async () => {
  t = await buildOAuthTestApp({ SCOPES_FILE: FIRST })
  client = await createClient(t.db, { scopes: ALL })
})
afterAll(async () => {
  await t.close()
})

/** The consent page for `scope`, as the user sees it. */
async function consentPage(s: BrowserSession, scope: string | undefined) {
  return s.get(authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: client.redirectUri, scope }))
}

/** Code flow with PKCE through the consent page, then the token endpoint. */
async function tokenFor(s: BrowserSession, scope: string | undefined) {
  const code = await obtainCode(s, client, { scope, code_challenge: CHALLENGE, code_challenge_method: 'S256' })
  const res = await exchange(t.app, client, { code, code_verifier: VERIFIER })
  expect(res.statusCode, res.body).toBe(200)
  return res.json() as { access_token: string; scope: string }
}

describe('discovery and metadata', () => {
  it("list OpenID Connect's scopes and the file's, in the file's order", async () => {
    const expected = ['openid', 'email', 'profile', ...ALL]
    for (const url of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      const res = await t.app.inject({ method: 'GET', url })
      expect(res.statusCode, url).toBe(200)
      expect(res.json().scopes_supported, url).toEqual(expected)
    }
  })
})

describe('the console', () => {
  it("offers the file's scopes as checkboxes with their plain words, and refuses the seed's", async () => {
    const dev = await new BrowserSession(t.app).signUpAndLogIn('developer@example.com')
    const form = await dev.get('/applications/new')
    expect(form.statusCode).toBe(200)
    expect(form.body).toContain('value="invoices:write" checked')
    expect(form.body).toContain('Create and change your invoices')
    expect(form.body).not.toContain('value="write_teams"')

    const created = await dev.post('/applications', applicationForm({ scopes: ['invoices:write', 'openid'] }))
    expect(created.statusCode, created.body.slice(0, 300)).toBe(200)
    const stored = await t.db.selectFrom('applications').select('allowed_scopes').where('name', '=', 'Team Planner').execute()
    expect(stored.map((a) => a.allowed_scopes)).toContainEqual(['openid', 'invoices:write'])

    const refused = await dev.post('/applications', applicationForm({ scopes: ['write'] }))
    expect(refused.statusCode).toBe(400)
    expect(refused.body).toContain('Choose scopes from the list.')
  })
})

describe('consent and the token endpoint', () => {
  it('show the plain words of the scope and of what it implies, and issue both', async () => {
    const s = await loggedInUser(t.app)
    const page = await consentPage(s, 'invoices:write')
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('Create and change your invoices')
    expect(page.body).toContain('See your invoices')
    expect(page.body).not.toContain('Delete your invoices')

    const approved = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
    const code = locationParams(approved).get('code')!
    const res = await exchange(t.app, client, { code })
    expect(res.statusCode, res.body).toBe(200)
    // RFC 6749 5.1: the scope issued differs from the one requested, so the response says it.
    expect(res.json().scope).toBe('invoices:read invoices:write')
    expect((await tokenRow(t.db, res.json().access_token))?.scopes).toEqual(['invoices:read', 'invoices:write'])
  })

  it("grants the file's default without a scope parameter", async () => {
    const s = await loggedInUser(t.app)
    expect((await tokenFor(s, undefined)).scope).toBe('invoices:read')
  })

  it("answers invalid_scope for a scope the file does not define, the seed's included", async () => {
    const s = await loggedInUser(t.app)
    for (const scope of ['read', 'invoices:archive']) {
      // An application the user never authorized is not sent errors automatically (docs/decisions/005-trusted-redirects.md).
      const res = await consentPage(s, scope)
      expect(res.statusCode, scope).toBe(400)
      const back = new URL(returnLink(res.body)!.href.replace(/&amp;/g, '&'))
      expect(back.searchParams.get('error'), scope).toBe('invalid_scope')
      expect(back.searchParams.get('error_description'), scope).toBe(`Unknown scope: ${scope}`)
    }
  })

  it('shows the granted scopes in plain words on Authorized Applications', async () => {
    const s = await loggedInUser(t.app)
    await tokenFor(s, 'invoices:write')
    const page = await s.get('/authorized-applications')
    expect(page.body).toContain('Create and change your invoices')
    expect(page.body).toContain('See your invoices')
  })
})

describe('the command line', () => {
  it('gatehouse scopes prints the list the server reads', async () => {
    const { code, out, err } = await runCliOn(t, ['scopes', '--json'])
    expect(code, err).toBe(0)
    const listed = JSON.parse(out) as { scopes: Array<{ name: string; implies: string[] }>; default: string[] }
    expect(listed.scopes.map((s) => s.name)).toEqual(['openid', 'email', 'profile', ...ALL])
    expect(listed.scopes.find((s) => s.name === 'invoices:write')?.implies).toEqual(['invoices:read'])
    expect(listed.default).toEqual(['invoices:read'])
  })
})

/** A resource API behind the verifier, with the same scopes file: GET /invoices needs invoices:read. */
async function resourceApi(scopes: string): Promise<{ api: FastifyInstance; verifier: Verifier }> {
  const verifier = createVerifier({
    mode: 'database',
    database: t.deps.bus.verifierDatabase(t.deps.database),
    now: () => t.clock().getTime(),
    scopes,
  })
  await verifier.ready()
  const api = Fastify()
  await api.register(gatehouseVerifier, { verifier })
  api.get('/invoices', { config: { requiredScope: 'invoices:read' } }, async () => ({ ok: true }))
  api.delete('/invoices', { config: { requiredScope: 'invoices:delete' } }, async () => ({ ok: true }))
  await api.ready()
  return { api, verifier }
}

function call(api: FastifyInstance, method: 'GET' | 'DELETE', token: string) {
  return api.inject({ method, url: '/invoices', headers: { authorization: `Bearer ${token}` } })
}

describe('the verifier with the same file', () => {
  it('lets a token for invoices:write through a route that needs invoices:read, and refuses what it lacks', async () => {
    const { api, verifier } = await resourceApi(FIRST)
    try {
      const s = await loggedInUser(t.app)
      const { access_token } = await tokenFor(s, 'invoices:write')
      expect((await call(api, 'GET', access_token)).statusCode).toBe(200)
      const refused = await call(api, 'DELETE', access_token)
      expect(refused.statusCode).toBe(403)
      expect(refused.json().error).toBe('insufficient_scope')
    } finally {
      await api.close()
      await verifier.close()
    }
  })

  it('refuses, at registration, a route that requires a scope the file does not define', async () => {
    const verifier = createVerifier({ mode: 'database', database: t.deps.bus.verifierDatabase(t.deps.database), scopes: FIRST })
    const api = Fastify()
    try {
      await api.register(gatehouseVerifier, { verifier })
      expect(() => api.get('/teams', { config: { requiredScope: 'write_teams' } }, async () => ({}))).toThrow(/Unknown scope "write_teams"/)
      expect(() => api.get('/invoices', { config: { requiredScope: 'invoices:read' } }, async () => ({}))).not.toThrow()
      // The Express / node:http middleware checks when it is made.
      expect(() => requireToken(verifier, 'write_teams')).toThrow(/Unknown scope "write_teams"/)
      expect(() => requireToken(verifier, 'invoices:write')).not.toThrow()
    } finally {
      await api.close().catch(() => {})
      await verifier.close()
    }
  })
})

describe('a later file never widens what was granted (docs/decisions/018-operator-scopes.md)', () => {
  // The same database, restarted with invoices:write now implying invoices:delete, and later
  // with invoices:delete removed.
  const WIDER = scopesFile('wider.json', {
    ...INVOICES,
    scopes: INVOICES.scopes.map((s) => (s.name === 'invoices:write' ? { ...s, implies: ['invoices:read', 'invoices:delete'] } : s)),
  })
  const NARROWER = scopesFile('narrower.json', { ...INVOICES, scopes: INVOICES.scopes.filter((s) => s.name !== 'invoices:delete') })

  it('keeps a live token to what it was granted, and asks the user again for the wider meaning', async () => {
    const s = await loggedInUser(t.app)
    const before = await tokenFor(s, 'invoices:write')
    const again = await consentPage(s, 'invoices:write')
    expect(again.statusCode, 'remembered consent under the first file').toBe(302)

    const restarted = await buildTestApp({ LOGIN_RATE_LIMIT: '10000', SCOPES_FILE: WIDER }, t.testDb)
    const { api, verifier } = await resourceApi(WIDER)
    try {
      // The token issued before carries what the user saw: delete is not among it.
      expect((await call(api, 'DELETE', before.access_token)).statusCode).toBe(403)
      expect((await call(api, 'GET', before.access_token)).statusCode).toBe(200)
      // The remembered consent covers invoices:write as it was; the wider meaning is asked for.
      const session = new BrowserSession(restarted.app)
      await session.logIn(s.email)
      const page = await session.get(
        authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: client.redirectUri, scope: 'invoices:write' }),
      )
      expect(page.statusCode, page.headers.location as string).toBe(200)
      expect(page.body).toContain('Delete your invoices')
    } finally {
      await api.close()
      await verifier.close()
      await restarted.close()
    }
  })

  it('makes a removed scope grant nothing, and stops offering it', async () => {
    const user = await t.db.selectFrom('users').select('id').limit(1).executeTakeFirstOrThrow()
    const carrying = await createAccessToken(t.db, {
      userId: user.id,
      applicationId: client.id,
      scopes: ['invoices:read', 'invoices:delete'],
    })
    const verifier = createVerifier({ mode: 'database', database: t.deps.bus.verifierDatabase(t.deps.database), scopes: NARROWER })
    try {
      const result = await verifier.verify(`Bearer ${carrying.token}`, 'invoices:read')
      expect(result.ok).toBe(true)
      expect(() => verifier.assertKnownScope('invoices:delete')).toThrow(/Unknown scope "invoices:delete"/)
      const refused = await verifier.verify(`Bearer ${carrying.token}`, 'invoices:delete')
      expect(refused.ok).toBe(false)
    } finally {
      await verifier.close()
    }
    const narrower = await buildTestApp({ SCOPES_FILE: NARROWER }, t.testDb)
    try {
      const meta = await narrower.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })
      expect(meta.json().scopes_supported).not.toContain('invoices:delete')
    } finally {
      await narrower.close()
    }
  })
})
