import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { basicAuth, createAccessToken, createApplication } from '../../helpers/factories.js'
import { resourceServerTestFile } from '../../helpers/file-set-up.js'
import { freePort } from '../../helpers/gatehouse-process.js'
import { NOTICE_WAIT_MS, msUntil } from '../../helpers/propagation.js'
import { listenOnFreePort } from '../../helpers/app.js'

/*
 * The walk-through of docs/resource-apis.md: `npm run example:resource` (examples/resource-api.ts) as its own
 * process, checking tokens against a listening Gatehouse by introspection and following its
 * revocation stream.
 */

const {
  t,
  user,
  app,
  rs: resourceServer,
} = resourceServerTestFile({
  userEmail: 'reader@example.com',
  applicationName: 'Team Planner',
  resourceServerName: 'Example resource API',
})
let gatehouse: string
let example: ChildProcess
let api: string
let output = ''

beforeAll(async () => {
  gatehouse = await listenOnFreePort(t)

  const port = await freePort()
  api = `http://127.0.0.1:${port}`
  example = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', 'examples/resource-api.ts'], {
    cwd: fileURLToPath(new URL('../../../', import.meta.url)),
    env: {
      PATH: process.env.PATH ?? '',
      GATEHOUSE_URL: gatehouse,
      CLIENT_ID: resourceServer.clientId,
      CLIENT_SECRET: resourceServer.clientSecret,
      PORT: String(port),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  example.stdout!.on('data', (d: Buffer) => (output += d.toString()))
  example.stderr!.on('data', (d: Buffer) => (output += d.toString()))
  await msUntil(
    () => {
      if (example.exitCode !== null) throw new Error(`the example exited:\n${output}`)
      return output.includes('Example resource API on')
    },
    30_000,
    performance.now(),
    100,
  )
})
afterAll(async () => {
  if (example && example.exitCode === null) {
    const exited = new Promise((resolve) => example.once('exit', resolve))
    example.kill('SIGTERM')
    await exited
  }
})

const get = (token?: string) => fetch(`${api}/me`, { headers: token ? { authorization: `Bearer ${token}` } : {} })
const createTeam = (token: string) =>
  fetch(`${api}/teams`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Tigers' }),
  })

it('refuses /me to a machine token, which speaks for no user, and lets it create a team as its client', async () => {
  const machine = await createApplication(t.db, { kind: 'machine', clientCredentialsScopes: ['read', 'write_teams'] })
  const issued = await fetch(`${gatehouse}/oauth/token`, {
    method: 'POST',
    headers: { authorization: basicAuth(machine.clientId, machine.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  })
  const { access_token: token } = (await issued.json()) as { access_token: string }
  const me = await get(token)
  expect(me.status).toBe(403)
  expect(await me.json()).toMatchObject({ error: 'no_user' })
  const created = await createTeam(token)
  expect(created.status).toBe(201)
  expect(await created.json()).toMatchObject({ name: 'Tigers', created_by: machine.clientId })
})

it('walks through a token that works, lacks a scope, and stops working after revocation', async () => {
  const readOnly = await createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes: ['read'] })

  const missing = await get()
  expect(missing.status).toBe(401)
  // Its resource is its own origin by default, so every challenge names its metadata (RFC 9728 §5.1).
  const metadata = `resource_metadata="${api}/.well-known/oauth-protected-resource"`
  expect(missing.headers.get('www-authenticate')).toBe(
    `Bearer realm="gatehouse", ${metadata}, DPoP algs="ES256 ES384 ES512 EdDSA Ed25519 PS256 PS384 PS512 RS256 RS384 RS512", ${metadata}`,
  )

  const me = await get(readOnly.token)
  expect(me.status).toBe(200)
  expect(await me.json()).toEqual({ user_id: user.id, email: 'reader@example.com', application: app.clientId, scopes: ['read'] })

  const forbidden = await createTeam(readOnly.token)
  expect(forbidden.status).toBe(403)
  expect(forbidden.headers.get('www-authenticate')).toContain('error="insufficient_scope"')

  const writer = await createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes: ['read', 'write'] })
  const created = await createTeam(writer.token)
  expect(created.status).toBe(201)
  expect(await created.json()).toMatchObject({ name: 'Tigers', created_by: user.id })

  const started = performance.now()
  const revoked = await fetch(`${gatehouse}/oauth/revoke`, {
    method: 'POST',
    headers: { authorization: basicAuth(app.clientId, app.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: `token=${readOnly.token}`,
  })
  expect(revoked.status).toBe(200)
  await msUntil(async () => (await get(readOnly.token)).status === 401, NOTICE_WAIT_MS, started)
  expect((await get(writer.token)).status).toBe(200)
})

it('publishes its metadata (RFC 9728) naming Gatehouse, and refuses a token minted for another resource', async () => {
  const res = await fetch(`${api}/.well-known/oauth-protected-resource`)
  expect(res.status).toBe(200)
  expect(res.headers.get('cache-control')).toBe('public, max-age=3600')
  expect(await res.json()).toMatchObject({ resource: api, authorization_servers: [gatehouse], bearer_methods_supported: ['header'] })
  expect(output).toContain(`Resource ${api}, its metadata at ${api}/.well-known/oauth-protected-resource`)

  const ours = await createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes: ['read'], audience: [api] })
  expect((await get(ours.token)).status).toBe(200)
  const theirs = await createAccessToken(t.db, {
    userId: user.id,
    applicationId: app.id,
    scopes: ['read'],
    audience: ['https://other.example.test'],
  })
  const refused = await get(theirs.token)
  expect(refused.status).toBe(401)
  expect(await refused.json()).toEqual({ error: 'invalid_token', error_description: 'The access token is for another resource' })
})
