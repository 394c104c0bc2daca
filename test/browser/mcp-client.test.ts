import { type ChildProcess, spawn } from 'node:child_process'
import { rmSync } from 'node:fs'
import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { type OAuthClientProvider, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it, vi } from 'vitest'
import { type Db, type DatabaseHandle, createDatabase } from '../../src/db/connect.js'
import { hashPassword } from '../../src/lib/passwords.js'
import { fillLogIn, launchBrowser } from '../helpers/browser.js'
import { ensureBuilt } from '../helpers/build.js'
import { type TestDatabase, createTestDatabase, serverUrl } from '../helpers/db.js'
import { type ApplicationFixture, basicAuth, createApplication } from '../helpers/factories.js'
import { type GatehouseProcess, freePort, runBuiltCli, startGatehouse } from '../helpers/gatehouse-process.js'
import { type DocumentServer, startDocumentServer } from '../helpers/metadata-document-server.js'
import { pgliteDataDir } from '../helpers/pglite-data-dir.js'
import { until } from '../helpers/oauth-load.js'

// Two Gatehouse processes, the example MCP server's and Chromium on a two-core machine: a slow
// start is not a failure.
vi.setConfig({ testTimeout: 120_000 })

/*
 * The MCP TypeScript SDK's own client, unmodified, with its own OAuth support, against the example
 * MCP server (examples/mcp-server.ts, as `npm run example:mcp` starts it) protected by a fresh
 * Gatehouse started as `npm start` starts it, with nothing registered for the client
 * (docs/agents.md "Try it: an MCP server and the MCP SDK's client"). The SDK discovers Gatehouse
 * from the server's 401 (RFC 9728 §5.1) and Gatehouse's metadata (RFC 8414), identifies itself by
 * the https URL of its Client ID Metadata Document (served from loopback, allowed by the
 * development settings of docs/agents.md), and asks for a token for the server's resource
 * identifier (RFC 8707); the user approves in Chromium. A token for another declared resource is
 * refused by the server; with CLIENT_ID_METADATA_DOCUMENTS off the same client is refused, and
 * nothing reaches its document. PostgreSQL with TEST_DATABASE_URL, PGlite (DATA_DIR) without.
 */

const EMAIL = 'mcp-user@example.com'
const PASSWORD = 'correct horse battery'
const DOCUMENT = '/assistant/client.json'
const OTHER = 'https://api.example.com/'

let testDb: TestDatabase | undefined
let dataDir: string | undefined
/** Where the Gatehouse processes keep their data: DATABASE_URL or DATA_DIR. */
let storage: Record<string, string>
let gatehousePort: number
let gatehouse: GatehouseProcess | undefined
let docs: DocumentServer
let callbacks: LoopbackCallback
let browser: Browser | undefined
let example: ChildProcess | undefined
let exampleOutput = ''
let userId: string
let mcpServerApp: ApplicationFixture
let teamsApi: ApplicationFixture
let machine: ApplicationFixture
/** The MCP server's URL, which is its resource identifier. */
let mcpUrl: string
let clientId: string

/** The client's own loopback listener for its redirect URI (RFC 8252 §7.3), as a desktop assistant runs one. */
interface LoopbackCallback {
  readonly url: string
  readonly received: URL[]
  close(): Promise<void>
}

async function listenForCallback(): Promise<LoopbackCallback> {
  const received: URL[] = []
  const server: Server = createServer((req, res) => {
    received.push(new URL(req.url ?? '/', 'http://127.0.0.1'))
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<p>You may close this window.</p>')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

/**
 * The SDK's OAuthClientProvider as an assistant implements it, in memory: its client_id is the
 * URL of its metadata document, and it "opens the browser" by remembering the URL.
 */
class AssistantProvider implements OAuthClientProvider {
  readonly authorizationUrls: URL[] = []
  #client: OAuthClientInformationMixed | undefined
  #tokens: OAuthTokens | undefined
  #verifier = ''

  constructor(
    readonly clientMetadataUrl: string,
    readonly redirectUrl: string,
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Example Assistant',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }
  }
  clientInformation() {
    return this.#client
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.#client = info
  }
  tokens() {
    return this.#tokens
  }
  saveTokens(tokens: OAuthTokens) {
    this.#tokens = tokens
  }
  /** Forgets its tokens (as when they expired), keeping its client information. */
  forgetTokens() {
    this.#tokens = undefined
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrls.push(url)
  }
  saveCodeVerifier(verifier: string) {
    this.#verifier = verifier
  }
  codeVerifier() {
    return this.#verifier
  }
}

function connectAs(provider: AssistantProvider): { client: Client; connecting: Promise<void>; transport: StreamableHTTPClientTransport } {
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider })
  const client = new Client({ name: 'example-assistant', version: '1.0.0' })
  return { client, transport, connecting: client.connect(transport) }
}

/** A user who logs in with a password, inserted before Gatehouse starts. */
async function seedUser(db: Db): Promise<string> {
  const now = new Date()
  const row = await db
    .insertInto('users')
    .values({ email: EMAIL, password_hash: await hashPassword(PASSWORD), created_at: now, email_verified_at: now })
    .returning('id')
    .executeTakeFirstOrThrow()
  return row.id
}

/** The metadata-document settings of docs/agents.md "Development set-ups", or none (off). */
function gatehouseEnv(documents: boolean): Record<string, string> {
  const development = {
    CLIENT_ID_METADATA_DOCUMENTS: 'true',
    CLIENT_ID_METADATA_ALLOW_PRIVATE_ADDRESSES: 'true',
    CLIENT_ID_METADATA_EXTRA_CA_FILE: docs.caFile!,
  }
  return { ...storage, PUBLIC_URL: `http://127.0.0.1:${gatehousePort}`, ...(documents ? development : {}) }
}

async function startExample(env: Record<string, string>): Promise<void> {
  example = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', 'examples/mcp-server.ts'], {
    cwd: fileURLToPath(new URL('../../', import.meta.url)),
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  example.stdout!.on('data', (d: Buffer) => (exampleOutput += d.toString()))
  example.stderr!.on('data', (d: Buffer) => (exampleOutput += d.toString()))
  await until(
    () => {
      if (example!.exitCode !== null) throw new Error(`the example MCP server exited:\n${exampleOutput}`)
      return exampleOutput.includes('Example MCP server on')
    },
    60_000,
    'the example MCP server to listen',
    100,
  )
}

beforeAll(async () => {
  await ensureBuilt()
  docs = await startDocumentServer()
  callbacks = await listenForCallback()
  clientId = docs.document(DOCUMENT, { client_name: 'Example Assistant', redirect_uris: [callbacks.url] })

  let seeding: DatabaseHandle
  if (serverUrl) {
    testDb = await createTestDatabase()
    storage = { DATABASE_URL: testDb.url! }
    seeding = testDb.handle
  } else {
    dataDir = await pgliteDataDir('migrated', 'gatehouse-mcp-')
    storage = { DATA_DIR: dataDir }
    seeding = await createDatabase({ dataDir })
  }
  try {
    userId = await seedUser(seeding.db)
    // Resource servers (as an operator marked them): the MCP server, whose credentials its
    // verifier introspects with, and another API; and a machine client for tokens of either.
    mcpServerApp = await createApplication(seeding.db, { name: 'Example MCP server', resourceServer: true, scopes: ['read'] })
    teamsApi = await createApplication(seeding.db, { name: 'Teams API', resourceServer: true, scopes: ['read'] })
    machine = await createApplication(seeding.db, { name: 'Nightly sync', kind: 'machine', clientCredentialsScopes: ['read'] })
  } finally {
    // PGlite's data directory belongs to one process at a time: Gatehouse's from now on.
    if (!serverUrl) await seeding.close()
  }

  gatehousePort = await freePort()
  const mcpPort = await freePort()
  mcpUrl = `http://127.0.0.1:${mcpPort}/mcp`
  gatehouse = await startGatehouse(gatehouseEnv(true), { built: true, port: gatehousePort })

  // The operator declares each resource server's identifier, as docs/agents.md says (on PGlite
  // the running server runs the command).
  const env = gatehouseEnv(true)
  const declared = await runBuiltCli(env, 'apps', 'resources', mcpServerApp.clientId, '--add', mcpUrl, '--ttl', '600')
  expect(declared, declared.stderr).toMatchObject({ code: 0 })
  expect((await runBuiltCli(env, 'apps', 'resources', teamsApi.clientId, '--add', OTHER)).code).toBe(0)

  await startExample({
    GATEHOUSE_URL: gatehouse.url,
    CLIENT_ID: mcpServerApp.clientId,
    CLIENT_SECRET: mcpServerApp.clientSecret,
    PORT: String(mcpPort),
  })
  browser = await launchBrowser()
}, 240_000)

afterAll(async () => {
  if (example && example.exitCode === null) {
    const exited = new Promise((resolve) => example!.once('exit', resolve))
    example.kill('SIGTERM')
    await exited
  }
  await browser?.close()
  await gatehouse?.stop()
  await callbacks?.close()
  await docs?.close()
  await testDb?.destroy()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
})

/** The provider of the first test, whose client information the last one reuses. */
let assistant: AssistantProvider

it('connects with nothing registered: discovers Gatehouse, identifies by its document, is approved in Chromium and calls the tool', async () => {
  assistant = new AssistantProvider(clientId, callbacks.url)
  const first = connectAs(assistant)
  // No token yet: the server's 401 names its metadata, which names Gatehouse; the SDK stops to
  // send the user to Gatehouse.
  await expect(first.connecting).rejects.toBeInstanceOf(UnauthorizedError)
  expect(assistant.authorizationUrls).toHaveLength(1)
  const authorize = assistant.authorizationUrls[0]!
  expect(authorize.origin + authorize.pathname).toBe(`${gatehouse!.url}/oauth/authorize`)
  expect(Object.fromEntries(authorize.searchParams)).toMatchObject({
    client_id: clientId,
    redirect_uri: callbacks.url,
    resource: mcpUrl,
    // The server's metadata says which scopes it takes (RFC 9728 §2 scopes_supported).
    scope: 'read',
    code_challenge_method: 'S256',
  })
  expect(assistant.clientInformation()).toMatchObject({ client_id: clientId })

  const context = await browser!.newContext()
  const page = await context.newPage()
  await page.goto(authorize.href)
  await page.waitForURL(/\/login\?next=/)
  await fillLogIn(page, EMAIL, PASSWORD)
  await page.waitForURL(/\/oauth\/authorize\?/)
  expect(await page.locator('h1').textContent()).toBe('Authorize Example Assistant')
  expect(await page.locator('#unregistered-client').textContent()).toContain(
    `Example Assistant is not registered with Gatehouse: its identity is only the web address ${new URL(clientId).host}.`,
  )
  // The API the token is for, by its resource server's name.
  expect(await page.getByText('Example MCP server').count()).toBeGreaterThan(0)
  // Gatehouse read the document to show this page.
  expect(docs.requests.get(DOCUMENT)).toBeGreaterThanOrEqual(1)
  await page.getByRole('button', { name: 'Authorize' }).click()
  await page.waitForURL((url) => url.href.startsWith(callbacks.url))
  await context.close()
  // Chromium may ask the listener for a favicon too.
  const callback = callbacks.received.filter((url) => url.pathname === '/callback').at(-1)!
  const code = callback.searchParams.get('code')!
  expect(code, callback.href).toBeTruthy()
  // RFC 9207: the response names who issued it, as Gatehouse's metadata promises.
  expect(callback.searchParams.get('iss')).toBe(gatehouse!.url)

  await first.transport.finishAuth(code)
  const tokens = assistant.tokens()!
  expect(tokens.token_type).toBe('Bearer')
  // A token for a declared resource expires (docs/decisions/025-audiences.md): 600 s, as declared.
  expect(tokens.expires_in).toBe(600)

  const second = connectAs(assistant)
  await second.connecting
  try {
    expect((await second.client.listTools()).tools.map((t) => t.name)).toEqual(['whoami'])
    const result = await second.client.callTool({ name: 'whoami' })
    expect(result.isError).toBeFalsy()
    const [content] = result.content as { type: string; text: string }[]
    const answer = JSON.parse(content!.text) as Record<string, unknown>
    expect(answer).toMatchObject({ user_id: userId, email: EMAIL, application: clientId, scopes: ['read'], audience: [mcpUrl] })
    expect(answer.expires_at).toBe((answer.issued_at as number) + 600)
  } finally {
    await second.client.close()
  }
})

/** An MCP initialize request as the SDK's client sends it, with `token`. */
function initialize(token: string): Promise<Response> {
  return fetch(mcpUrl, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } },
    }),
  })
}

async function machineToken(resource: string): Promise<string> {
  const res = await fetch(`${gatehouse!.url}/oauth/token`, {
    method: 'POST',
    headers: { authorization: basicAuth(machine.clientId, machine.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'read', resource }),
  })
  expect(res.status).toBe(200)
  return ((await res.json()) as { access_token: string }).access_token
}

it('refuses a token minted for another declared resource (invalid_token), and takes the same client’s token for itself', async () => {
  const forOther = await initialize(await machineToken(OTHER))
  expect(forOther.status).toBe(401)
  const challenge = forOther.headers.get('www-authenticate')!
  expect(challenge).toContain('error="invalid_token"')
  expect(challenge).toContain(`resource_metadata="${new URL(mcpUrl).origin}/.well-known/oauth-protected-resource/mcp"`)

  // The same client, the same scope, for this server: the MCP server answers.
  const forThis = await initialize(await machineToken(mcpUrl))
  expect(forThis.status).toBe(200)
  expect(((await forThis.json()) as { result: { serverInfo: { name: string } } }).result.serverInfo.name).toBe('gatehouse-example-mcp')
})

it('with CLIENT_ID_METADATA_DOCUMENTS off, refuses the same client plainly and fetches nothing', async () => {
  // The operator restarts Gatehouse without the setting, on the same data and address.
  await gatehouse!.stop()
  gatehouse = await startGatehouse(gatehouseEnv(false), { built: true, port: gatehousePort })
  docs.connections = 0
  const fetchedBefore = docs.requests.get(DOCUMENT)

  const metadata = (await (await fetch(`${gatehouse.url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>
  expect(metadata).not.toHaveProperty('client_id_metadata_document_supported')

  // A new installation of the assistant: with nothing saying Gatehouse takes a URL as client_id,
  // the SDK falls back to dynamic registration, which Gatehouse does not offer.
  const fresh = new AssistantProvider(clientId, callbacks.url)
  await expect(connectAs(fresh).connecting).rejects.toThrow('Incompatible auth server: does not support dynamic client registration')
  expect(fresh.authorizationUrls).toEqual([])

  // The installation that connected before keeps its client_id: once its token is gone, the SDK
  // sends the user to Gatehouse, which knows no such client, even though it stored one while on.
  assistant.forgetTokens()
  await expect(connectAs(assistant).connecting).rejects.toBeInstanceOf(UnauthorizedError)
  const authorize = assistant.authorizationUrls.at(-1)!
  expect(authorize.searchParams.get('client_id')).toBe(clientId)
  const context = await browser!.newContext()
  const page = await context.newPage()
  const answer = await page.goto(authorize.href)
  expect(answer!.status()).toBe(400)
  expect(await page.locator('main').textContent()).toContain('No application is registered with this client_id.')
  await context.close()

  expect(docs.connections).toBe(0)
  expect(docs.requests.get(DOCUMENT)).toBe(fetchedBefore)
})
