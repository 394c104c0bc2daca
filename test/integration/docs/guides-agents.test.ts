import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { BrowserSession } from '../../helpers/browser-session.js'
import { createApplicationViaConsole } from '../../helpers/console.js'
import { type DocGatehouse, startDocGatehouse } from '../../helpers/doc-gatehouse.js'
import { blocksUnder, commands, section } from '../../helpers/doc-blocks.js'

/*
 * docs/agents.md "Try it": its command blocks run as printed (test/helpers/doc-blocks.ts) against
 * a Gatehouse started with the settings its first step gives `npm start`, and the certificate
 * that step makes; the example MCP server started by `npm run example:mcp`. The MCP client of
 * step 5 is test/browser/mcp-client.test.ts.
 */

const AGENTS = 'docs/agents.md'
const TRY_IT = "Try it: an MCP server and the MCP SDK's client"

let docs: DocGatehouse | undefined
let dir: string

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-docs-agents-'))
})
afterAll(async () => {
  await docs?.close()
  await rm(dir, { recursive: true, force: true })
})

it('"Try it": the certificate and settings of step 1, then steps 2 to 4 as printed', { timeout: 120_000 }, async () => {
  const blocks = blocksUnder(AGENTS, TRY_IT)
  expect(blocks).toHaveLength(4)
  const [startStep, resourceStep, exampleStep, watchStep] = blocks

  // Step 1: the certificate as printed (in a directory of its own), and Gatehouse with the
  // settings its `npm start` names, the certificate's file among them.
  const [openssl, start, ...more] = commands(startStep!)
  expect(more).toEqual([])
  await promisify(execFile)('bash', ['-c', openssl!.line], { cwd: dir, env: { PATH: process.env.PATH ?? '' } })
  expect(start!.line).toMatch(/ npm start$/)
  const settings = Object.fromEntries([...start!.line.matchAll(/\b([A-Z_]+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]))
  expect(Object.keys(settings).sort()).toEqual([
    'CLIENT_ID_METADATA_ALLOW_PRIVATE_ADDRESSES',
    'CLIENT_ID_METADATA_DOCUMENTS',
    'CLIENT_ID_METADATA_EXTRA_CA_FILE',
  ])
  settings.CLIENT_ID_METADATA_EXTRA_CA_FILE = join(dir, settings.CLIENT_ID_METADATA_EXTRA_CA_FILE!)
  docs = await startDocGatehouse({ env: settings })
  const { t, runner } = docs

  // Step 2 (the console, in prose): the resource server's application as told.
  const tryIt = section(AGENTS, TRY_IT)
  const registered = /"Example MCP server" in "Your Applications" \(redirect URI\s+`([^`]+)`, scope `(\w+)`/.exec(tryIt)!
  const s = await new BrowserSession(t.app).signUpAndLogIn('you@example.com')
  const rs = await createApplicationViaConsole(s, { name: 'Example MCP server', redirect_uris: registered[1]!, scopes: [registered[2]!] })
  Object.assign(runner.env, { RS_ID: rs.clientId, RS_SECRET: rs.clientSecret })
  await runner.runBlock(resourceStep!)
  const declared = await t.db.selectFrom('resource_identifiers').select('identifier').execute()
  expect(declared.map((r) => r.identifier)).toEqual([`http://127.0.0.1:${runner.mcpPort}/mcp`])

  // Steps 3 and 4: the example started, then what a client sees before it has a token.
  await runner.runBlock(exampleStep!)
  await runner.runBlock(watchStep!)
})
