import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it, vi } from 'vitest'
import { ensureBuilt } from '../helpers/build.js'
import { createTestDatabase, type TestDatabase } from '../helpers/db.js'
import { type GatehouseProcess, freePort, runBuiltCli, startGatehouse } from '../helpers/gatehouse-process.js'
import { recoveryCodesOnPage, secretOnPage, totpCode } from '../helpers/totp.js'

// Real processes on a two-core machine that runs another test file beside this one.
vi.setConfig({ testTimeout: 120_000 })

/*
 * docker-compose.yml as shipped (docs/operating/docker.md, docs/operating/admin.md "The first operator"): the built server started
 * with the environment the compose file gives the gatehouse service (and the Dockerfile's ENV
 * beneath it), read from the files, never copied here. Only what must differ outside a container
 * is replaced: DATABASE_URL (the test's own database), PORT and PUBLIC_URL (a free port, still on
 * 127.0.0.1, an IP address as shipped), DATA_DIR (a temporary directory for the outbox), and
 * SECRET_KEY, which the reader puts in .env. No Docker engine is needed.
 */

const ROOT = join(import.meta.dirname, '../..')

/** The Dockerfile's runtime `ENV` line: what every container starts with. */
function dockerfileEnv(): Record<string, string> {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8')
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '))
  const line = /^ENV (.+)$/m.exec(runtime)![1]!
  return Object.fromEntries(line.split(/\s+/).map((pair) => pair.split('=') as [string, string]))
}

/**
 * The gatehouse service's `environment:` block, a line at a time (the file is plain `KEY: value`
 * lines there; no YAML parser is a dependency), with `${NAME:?message}` and `${NAME:-default}`
 * interpolated from `dotenv` as Compose does; a required name missing throws its message.
 */
function composeEnv(dotenv: Record<string, string>): Record<string, string> {
  const lines = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8').split('\n')
  const service = lines.indexOf('  gatehouse:')
  const start = lines.findIndex((l, i) => i > service && l === '    environment:')
  expect(service).toBeGreaterThan(0)
  expect(start).toBeGreaterThan(service)
  const env: Record<string, string> = {}
  for (const line of lines.slice(start + 1)) {
    if (/^\s*#/.test(line)) continue
    const m = /^ {6}([A-Z_]+): (.*)$/.exec(line)
    if (!m) break
    const value = m[2]!.replace(/^'(.*)'$/, '$1').replace(/^"(.*)"$/, '$1')
    env[m[1]!] = value.replace(/\$\{([A-Z_]+)(?::([?-])([^}]*))?\}/g, (_all, name: string, kind?: string, word?: string) => {
      const set = dotenv[name]
      if (set) return set
      if (kind === '?') throw new Error(`required variable ${name} is missing a value: ${word}`)
      return kind === '-' ? word! : ''
    })
  }
  return env
}

/** A browser over real HTTP: cookies, the last page's form token, forms sent from PUBLIC_URL's origin. */
class HttpBrowser {
  private readonly cookies = new Map<string, string>()
  private csrf = ''
  constructor(private readonly origin: string) {}

  private async send(path: string, init: RequestInit): Promise<{ status: number; location: string | null; body: string }> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
    const res = await fetch(`${this.origin}${path}`, { ...init, redirect: 'manual', headers: { cookie, ...init.headers } })
    for (const set of res.headers.getSetCookie()) {
      const [pair] = set.split(';')
      const [name, value] = [pair!.slice(0, pair!.indexOf('=')), pair!.slice(pair!.indexOf('=') + 1)]
      if (value === '' || /max-age=0/i.test(set)) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
    const body = await res.text()
    this.csrf = /name="_csrf" value="([^"]+)"/.exec(body)?.[1] ?? this.csrf
    return { status: res.status, location: res.headers.get('location'), body }
  }

  get(path: string) {
    return this.send(path, { method: 'GET' })
  }

  post(path: string, fields: Record<string, string>) {
    return this.send(path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: this.origin },
      body: new URLSearchParams({ _csrf: this.csrf, ...fields }).toString(),
    })
  }
}

let testDb: TestDatabase
let dataDir: string
let server: GatehouseProcess | undefined
beforeAll(async () => {
  await ensureBuilt()
  testDb = await createTestDatabase()
  dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-compose-'))
}, 180_000)
afterAll(async () => {
  await server?.stop()
  await testDb?.destroy()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
})

/** What the container's process sees, outside a container: see the comment at the top. */
async function containerEnv(dotenv: Record<string, string>, port: number): Promise<Record<string, string>> {
  const env = { ...dockerfileEnv(), ...composeEnv(dotenv) }
  expect(env).toMatchObject({ PORT: '3000', PUBLIC_URL: 'http://127.0.0.1:3000', DATABASE_URL: expect.stringMatching(/^postgres:/) })
  return { ...env, DATABASE_URL: testDb.url!, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, DATA_DIR: dataDir }
}

it('requires SECRET_KEY: Compose refuses without it, and the server started without it exits with one line', async () => {
  expect(() => composeEnv({})).toThrow(/SECRET_KEY is missing a value: set SECRET_KEY in \.env — see docs\/operating\/docker\.md/)
  // As if Compose passed it empty: the server itself refuses, before it touches the database.
  const env = await containerEnv({ SECRET_KEY: 'placeholder' }, await freePort())
  await expect(startGatehouse({ ...env, SECRET_KEY: '' }, { built: true, port: Number(env.PORT) })).rejects.toThrow(
    /^Gatehouse exited \(78\):\nSECRET_KEY is required with DATABASE_URL: generate one with [^\n]+\n$/,
  )
  expect(await testDb.handle.db.selectFrom('users').select('id').execute()).toEqual([])
})

it('as shipped, with SECRET_KEY: an OpenID Provider, and the first operator enrols an authenticator app and reaches /admin', async () => {
  const port = await freePort()
  const env = await containerEnv({ SECRET_KEY: randomBytes(32).toString('hex') }, port)
  server = await startGatehouse(env, { built: true, port })
  expect((await fetch(`${server.url}/.well-known/openid-configuration`)).status).toBe(200)

  // Sign up and log in, then the verification mail from the outbox, as `docker compose exec
  // gatehouse gatehouse outbox --last` shows it, opened in the same browser: with the account's
  // own session the link keeps the password (docs/accounts.md "Email verification").
  const email = 'operator@example.com'
  const password = 'correct horse battery'
  const browser = new HttpBrowser(server.url)
  await browser.get('/signup')
  expect((await browser.post('/signup', { email, password })).status).toBe(303)
  await browser.get('/login')
  expect((await browser.post('/login', { email, password })).location).toBe('/applications')
  const outbox = await runBuiltCli(env, 'outbox', '--to', email, '--last', '--json')
  expect(outbox.code, outbox.stderr).toBe(0)
  const link = (JSON.parse(outbox.stdout) as Array<{ links: string[] }>)[0]!.links.find((l) => l.includes('/verify-email?'))!
  expect(link.startsWith(server.url)).toBe(true)
  const verifyPage = await browser.get(link.slice(server.url.length))
  expect(verifyPage.status).toBe(200)
  expect(verifyPage.body).not.toContain('name="password"')
  expect((await browser.post('/verify-email', { token: new URL(link).searchParams.get('token')! })).status).toBe(303)

  // `docker compose exec gatehouse gatehouse admin add …`: the container's environment, SECRET_KEY included.
  expect(await runBuiltCli(env, 'admin', 'add', email)).toMatchObject({ code: 0, stdout: `${email} is now an operator.\n` })

  // REQUIRE_TWO_FACTOR=operators (the default): a second factor first.
  expect((await browser.get('/admin')).status).not.toBe(200)

  // The authenticator app: passkeys cannot work at an IP address, and the key now exists.
  await browser.get('/account/two-factor')
  expect((await browser.post('/account/two-factor/totp', {})).location).toBe('/account/two-factor/totp')
  const secret = secretOnPage((await browser.get('/account/two-factor/totp')).body)
  // RFC 6238 5.2: the step before the server's is accepted too, so a step ending now does not matter.
  const confirmed = await browser.post('/account/two-factor/totp/confirm', { code: totpCode(secret, new Date()), password })
  expect(confirmed.status, confirmed.body.slice(0, 300)).toBe(200)
  const recoveryCodes = recoveryCodesOnPage(confirmed.body)
  expect(recoveryCodes).toHaveLength(10)
  // The session that set the app up proved it doing so.
  expect((await browser.get('/admin')).status).toBe(200)

  // A log-in with both factors (a recovery code: the app's current code was just used) opens /admin.
  await browser.get('/account')
  expect((await browser.post('/logout', {})).status).toBe(303)
  await browser.get('/login')
  expect((await browser.post('/login', { email, password })).location).toBe('/login/second-factor')
  await browser.get('/login/second-factor')
  expect((await browser.post('/login/second-factor', { code: recoveryCodes[0]! })).location).toBe('/applications')
  const admin = await browser.get('/admin')
  expect(admin.status).toBe(200)
  expect(admin.body).toContain('<h1>Operator</h1>')
})
