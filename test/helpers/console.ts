import type { LightMyRequestResponse } from 'fastify'
import { expect } from 'vitest'
import { type TestContext, buildTestApp } from './app.js'
import { BrowserSession } from './browser-session.js'
import { fileSetUp } from './file-set-up.js'

/** Text inside the element with this id (the console's automation hooks: #client-id, #client-secret). */
export function textById(html: string, id: string): string | undefined {
  const m = new RegExp(`id="${id}"[^>]*>([^<]*)<`).exec(html)
  return m?.[1]
}

export interface ApplicationFields {
  /** The kind's radio button; absent: none checked, which registers a web application. */
  kind?: 'web' | 'native' | 'spa' | 'machine'
  name?: string
  description?: string
  /** Optional links shown on the consent page; empty (as a browser sends an empty field) when absent. */
  homepage_url?: string
  privacy_policy_url?: string
  redirect_uris?: string
  /** RP-Initiated Logout 1.0 3; empty when absent, as a browser sends an empty textarea. */
  post_logout_redirect_uris?: string
  scopes?: string[] | null
  require_pkce?: boolean
  allow_implicit?: boolean
  /** The ID Token signing algorithm's select; absent: RS256, as a browser sends the first option. */
  id_token_alg?: string
  require_pushed_requests?: boolean
  /** RFC 8628: the device flow's checkbox. */
  allow_device_flow?: boolean
}

/** The console form as a browser posts it: checkboxes present only when checked. */
export function applicationForm(f: ApplicationFields = {}): Record<string, string | string[] | null> {
  return {
    ...(f.kind === undefined ? {} : { kind: f.kind }),
    name: f.name ?? 'Team Planner',
    description: f.description ?? '',
    homepage_url: f.homepage_url ?? '',
    privacy_policy_url: f.privacy_policy_url ?? '',
    redirect_uris: f.redirect_uris ?? 'https://planner.example.com/oauth/callback',
    post_logout_redirect_uris: f.post_logout_redirect_uris ?? '',
    scopes: f.scopes === undefined ? ['read', 'write'] : f.scopes,
    require_pkce: f.require_pkce ? 'on' : null,
    allow_implicit: f.allow_implicit ? 'on' : null,
    id_token_alg: f.id_token_alg ?? 'RS256',
    require_pushed_requests: f.require_pushed_requests ? 'on' : null,
    allow_device_flow: f.allow_device_flow ? 'on' : null,
  }
}

export interface CreatedApplication {
  id: string
  clientId: string
  clientSecret: string
  res: LightMyRequestResponse
}

/** Registers an application through the console pages and reads the credentials off the page. */
export async function createApplicationViaConsole(s: BrowserSession, fields: ApplicationFields = {}): Promise<CreatedApplication> {
  await s.get('/applications/new')
  const res = await s.post('/applications', applicationForm(fields))
  expect(res.statusCode, res.body.slice(0, 500)).toBe(200)
  const clientId = textById(res.body, 'client-id')
  const clientSecret = textById(res.body, 'client-secret')
  const id = /href="\/applications\/([0-9a-f-]{36})\/edit"/.exec(res.body)?.[1]
  if (!clientId || !clientSecret || !id) throw new Error('application page lacks its credentials')
  return { id, clientId, clientSecret, res }
}

export interface ConsoleTest {
  t: TestContext
  /** Signed up, verified and logged in through the real pages: the console's user. */
  developer: BrowserSession
}

/**
 * A console test file's start: its own app over a fresh database (test/helpers/app.ts), and a
 * developer signed up, verified and logged in as BrowserSession.signUpAndLogIn does it. The
 * caller closes `t` after its tests.
 */
export async function buildConsoleTest(developerEmail: string): Promise<ConsoleTest> {
  const t = await buildTestApp()
  try {
    return { t, developer: await new BrowserSession(t.app).signUpAndLogIn(developerEmail) }
  } catch (error) {
    await t.close()
    throw error
  }
}

/**
 * buildConsoleTest for a whole test file: built in its beforeAll, closed in its afterAll
 * (test/helpers/file-set-up.ts).
 */
export function consoleTestFile(developerEmail: string): ConsoleTest {
  return fileSetUp<ConsoleTest>(
    async (parts) => {
      Object.assign(parts, await buildConsoleTest(developerEmail))
    },
    async (parts) => parts.t?.close(),
  )
}

/** The application's row as stored, every column; undefined once it is deleted. */
export function storedApplication(db: TestContext['db'], id: string) {
  return db.selectFrom('applications').selectAll().where('id', '=', id).executeTakeFirst()
}

/**
 * Page hygiene the console promises: a <title>, exactly one <h1>, and a <label for> for every
 * visible form field.
 */
export function expectAccessiblePage(html: string): void {
  expect(html).toMatch(/<title>[^<]+<\/title>/)
  expect(html.match(/<h1[\s>]/g) ?? []).toHaveLength(1)
  const labelled = new Set([...html.matchAll(/<label for="([^"]+)"/g)].map((m) => m[1]))
  for (const field of html.matchAll(/<(input|textarea|select)\b([^>]*)>/g)) {
    const attrs = field[2] ?? ''
    if (/type="(hidden|submit)"/.test(attrs)) continue
    const id = /\bid="([^"]+)"/.exec(attrs)?.[1]
    expect(id, `field without id: ${field[0]}`).toBeDefined()
    expect(labelled.has(id), `field #${id} has no <label for>`).toBe(true)
  }
}
