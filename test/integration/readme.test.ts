import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../../src/cli/run.js'
import { createServices } from '../../src/services.js'
import { type TestContext, buildTestApp } from '../helpers/app.js'
import { BrowserSession } from '../helpers/browser-session.js'
import { createApplicationViaConsole } from '../helpers/console.js'
import { freePort } from '../helpers/gatehouse-process.js'
import { NOTICE_WAIT_MS, msUntil } from '../helpers/propagation.js'
import { consentFields } from './oauth/helpers.js'

/*
 * The README's command blocks in "Console", "Protecting your API" and "Try it", run as printed
 * (README "Development"), so the README cannot drift from the product. The blocks are read from README.md,
 * never copied here. A reader's addresses are replaced as a reader on another port would
 * replace them: http://127.0.0.1:3000 is this test's Gatehouse, port 4000 the example's.
 *
 * How a block runs: each command (continuation lines joined) goes to bash with the values the
 * flow produced so far in its environment (RS_ID, APP_ID, CODE, TOKEN …). `npx gatehouse …` is
 * the command line, run in this process against the test's database (its words split by bash,
 * exactly as the shell would pass them), since the embedded database belongs to this process.
 * A command followed by `npm run` starts in the background until the test ends. Comment lines
 * after a command are what it prints: `# NNN, text` a status (curl -i) and text in the
 * response, `# text` text in the output; `…` stands for anything, a trailing `(…)` is prose.
 * `NAME=gat_…` is the reader pasting a value from the previous output: the test takes it from
 * there.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
const run = promisify(execFile)

interface Block {
  section: string
  /** The fenced block's text, without the fence and the list item's indentation. */
  text: string
}

/** The heading's section: from it to the next heading of the same or a higher level. */
function section(title: string): string {
  const lines = README.split('\n')
  const start = lines.findIndex((l) => /^#{2,4} /.test(l) && l.replace(/^#+ /, '') === title)
  if (start < 0) throw new Error(`README has no section "${title}"`)
  const level = /^#+/.exec(lines[start]!)![0].length
  const end = lines.findIndex((l, i) => i > start && /^#+ /.test(l) && /^#+/.exec(l)![0].length <= level)
  return lines.slice(start, end < 0 ? undefined : end).join('\n')
}

function commandBlocks(title: string): Block[] {
  return [...section(title).matchAll(/^( *)```sh\n([\s\S]*?)^ *```$/gm)].map((m) => ({
    section: title,
    text: m[2]!
      .split('\n')
      .map((l) => (l.startsWith(m[1]!) ? l.slice(m[1]!.length) : l))
      .join('\n')
      .trimEnd(),
  }))
}

interface Command {
  line: string
  expected: string[]
}

/** A block's commands, continuation lines joined, each with the comment lines that follow it. */
function commands(block: Block): Command[] {
  const out: Command[] = []
  let pending = ''
  for (const raw of block.text.split('\n')) {
    if (pending === '' && raw.startsWith('# ')) {
      out.at(-1)!.expected.push(raw.slice(2))
      continue
    }
    if (raw.endsWith('\\')) {
      pending += `${raw.slice(0, -1).trimEnd()} `
      continue
    }
    out.push({ line: `${pending}${raw.trim()}`, expected: [] })
    pending = ''
  }
  return out
}

/** `…` matches anything; everything else literally. */
function pattern(text: string): RegExp {
  return new RegExp(
    text
      .split('…')
      .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('[\\s\\S]*?'),
    'i',
  )
}

/** What a block may not run, each with the reason; kept short on purpose. */
const EXEMPT: Record<string, string> = {
  'npm pack -w @gatehouse/verifier':
    'builds and packs in the checkout and installs from the registry; verifier-tarball.test.ts packs and installs the tarball into another project',
  'git clone <gatehouse-repository> /path/to/gatehouse':
    'a clone of a placeholder and npm ci of a whole checkout (minutes, the network); the install of the built package is what verifier-tarball.test.ts checks',
}

let t: TestContext
let gatehouse: string
let apiPort: number
const env: Record<string, string> = {}
const background: ChildProcess[] = []

/** The reader's addresses, moved to where this test listens. */
function local(text: string): string {
  return text
    .replaceAll('http://127.0.0.1:3000', gatehouse)
    .replaceAll('127.0.0.1:4000', `127.0.0.1:${apiPort}`)
    .replace(/\bPORT=4000\b/, `PORT=${apiPort}`)
}

async function bash(line: string): Promise<string> {
  const { stdout } = await run('bash', ['-c', line], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? ROOT, ...env },
    timeout: 30_000,
  })
  return stdout
}

async function gatehouseCli(line: string): Promise<string> {
  // bash splits and expands the words, as it would for npx.
  const words = (await bash(`printf '%s\\0' ${line.replace(/^npx gatehouse /, '')}`)).split('\0').slice(0, -1)
  const out: string[] = []
  const err: string[] = []
  const code = await runCli(
    words,
    { open: () => createServices(t.config, { role: 'cli', database: t.testDb.handle, clock: t.clock }), mail: t.config.mail },
    { out: (s) => out.push(s), err: (s) => err.push(s) },
  )
  expect(code, err.join('\n')).toBe(0)
  return out.join('\n')
}

async function startInBackground(line: string, ready: string): Promise<string> {
  let output = ''
  const child = spawn('bash', ['-c', line], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? ROOT, ...env },
    detached: true,
  })
  background.push(child)
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()))
  await msUntil(
    () => {
      if (child.exitCode !== null) throw new Error(`${line} exited:\n${output}`)
      return output.includes(ready)
    },
    60_000,
    performance.now(),
    100,
  )
  return output
}

/** Checks the output against one comment line. */
function expectOutput(output: string, expected: string): void {
  const text = expected.replace(/ \([^)]*\)$/, '')
  const status = /^(\d{3})(?:, (.*))?$/.exec(text)
  if (status) {
    expect(output, expected).toMatch(new RegExp(`^HTTP/[\\d.]+ ${status[1]} `))
    if (status[2]) expect(output, expected).toMatch(pattern(status[2]))
  } else {
    expect(output, expected).toMatch(pattern(text))
  }
}

/** Runs one command of a block as printed; its output. */
async function runCommand(command: Command, previous: string): Promise<string> {
  const line = local(command.line)
  const paste = /^([A-Z_]+)=(\S*…\S*)$/.exec(line)
  if (paste) {
    const value = new RegExp(
      paste[2]!
        .split('…')
        .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('[A-Za-z0-9_-]+'),
    ).exec(previous)?.[0]
    expect(value, `${line}: nothing to paste in ${previous}`).toBeDefined()
    env[paste[1]!] = value!
    return previous
  }
  if (line.startsWith('npx gatehouse ')) {
    const output = await gatehouseCli(line)
    for (const e of command.expected) expectOutput(output, local(e))
    return output
  }
  if (/\bnpm run example:resource$/.test(line)) {
    const ready = local(command.expected[0] ?? '')
    expect(ready, 'the example says where it listens').toMatch(/^Example resource API on /)
    return startInBackground(line, ready)
  }
  // A revocation reaches the example's cache through its notice (README "How caches stay honest"),
  // so a check of what a command prints may be repeated until it has: NOTICE_WAIT_MS is a safety
  // net for a busy machine, not the one-second target (test/helpers/propagation.ts).
  let output = ''
  await msUntil(
    async () => {
      output = await bash(line)
      try {
        for (const e of command.expected) expectOutput(output, local(e))
        return true
      } catch {
        return false
      }
    },
    NOTICE_WAIT_MS,
    performance.now(),
    20,
  ).catch(() => {})
  for (const e of command.expected) expectOutput(output, local(e))
  return output
}

async function runBlock(block: Block): Promise<string> {
  let previous = ''
  for (const command of commands(block)) previous = await runCommand(command, previous)
  return previous
}

/** The code the reader copies from the address bar after Authorize, for this authorize URL. */
async function authorize(s: BrowserSession, url: string): Promise<string> {
  const page = await s.get(url.replace(gatehouse, ''))
  // A consent given before is remembered: then the answer is the redirect with the code.
  expect([200, 302], page.body.slice(0, 300)).toContain(page.statusCode)
  const res = page.statusCode === 302 ? page : await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
  const code = new URL(String(res.headers.location)).searchParams.get('code')
  expect(code, String(res.headers.location)).toBeTruthy()
  return code!
}

beforeAll(async () => {
  const port = await freePort()
  gatehouse = `http://127.0.0.1:${port}`
  apiPort = await freePort()
  t = await buildTestApp({ PUBLIC_URL: gatehouse })
  await t.app.listen({ port, host: '127.0.0.1' })
})

afterAll(async () => {
  for (const child of background) {
    if (child.exitCode !== null) continue
    const exited = new Promise((resolve) => child.once('exit', resolve))
    // The whole group: bash, npm and the example under it.
    process.kill(-child.pid!, 'SIGTERM')
    await exited
  }
  await t?.close()
})

describe('README "OAuth endpoints": the PKCE example and the token examples fit together', { timeout: 120_000 }, () => {
  it('exchanges the code of the authorize example with each token example as printed', async () => {
    const authorizeSection = section('`GET /oauth/authorize`')
    const example = /^```\n(\$AUTH\/oauth\/authorize\?[\s\S]*?)\n```$/m.exec(authorizeSection)![1]!.replace(/\n\s+/g, '')
    const verifier = /`CODE_VERIFIER=([A-Za-z0-9._~-]{43,128})`/.exec(authorizeSection)![1]!
    const s = await new BrowserSession(t.app).signUpAndLogIn('pkce-reader@example.com')
    const registered = await createApplicationViaConsole(s, {
      name: 'PKCE example',
      redirect_uris: new URL(example.replace('$AUTH', gatehouse)).searchParams.get('redirect_uri')!,
      scopes: ['read', 'write_teams'],
    })
    const blocks = commandBlocks('`POST /oauth/token`')
    expect(blocks).toHaveLength(3)
    for (const block of blocks) {
      Object.assign(env, {
        AUTH: gatehouse,
        CLIENT_ID: registered.clientId,
        CLIENT_SECRET: registered.clientSecret,
        CODE_VERIFIER: verifier,
      })
      env.CODE = await authorize(s, example.replace('$AUTH', gatehouse).replace('$CLIENT_ID', registered.clientId))
      const output = await runBlock(block)
      expect(JSON.parse(output), block.text).toMatchObject({ access_token: expect.stringMatching(/^gat_/), scope: 'read write_teams' })
    }
  })
})

describe('README command blocks', { timeout: 180_000 }, () => {
  it('are all run below or exempt by name', () => {
    const all = ['Console', 'Protecting your API', 'Try it: the example resource API'].flatMap(commandBlocks)
    const first = (b: Block) => b.text.split('\n')[0]!.replace(/ +#.*$/, '')
    expect(all.filter((b) => b.section === 'Console')).toEqual([])
    expect(all.filter((b) => b.section === 'Protecting your API').map(first)).toEqual(Object.keys(EXEMPT))
    expect(all.filter((b) => b.section !== 'Protecting your API')).toHaveLength(4)
  })

  it('"Try it": every step as printed, then step 3 again with the scopes Team Planner registered', async () => {
    const [resourceServerStep, exampleStep, tokenStep, watchStep] = commandBlocks('Try it: the example resource API')
    const tryIt = section('Try it: the example resource API')

    // Step 1 (the console, in prose): sign up, verify, register both applications as told.
    const s = await new BrowserSession(t.app).signUpAndLogIn('you@example.com')
    const registered = (name: string) =>
      new RegExp(`"${name}" \\(redirect URI\\s+\`([^\`]+)\`, scopes \`(\\w+)\` and \`(\\w+)\`\\)`).exec(tryIt)
    const planner = registered('Team Planner')!
    const planned = await createApplicationViaConsole(s, {
      name: 'Team Planner',
      redirect_uris: planner[1]!,
      scopes: [planner[2]!, planner[3]!],
    })
    const apiUri = /enter `([^`]+)` \(nothing listens there\) and check only the scope `(\w+)`/.exec(tryIt)!
    const api = await createApplicationViaConsole(s, { name: 'Example API', redirect_uris: apiUri[1]!, scopes: [apiUri[2]!] })
    Object.assign(env, { APP_ID: planned.clientId, APP_SECRET: planned.clientSecret, RS_ID: api.clientId, RS_SECRET: api.clientSecret })

    await runBlock(resourceServerStep!)
    expect(
      (await t.db.selectFrom('applications').select('is_resource_server').where('client_id', '=', api.clientId).executeTakeFirstOrThrow())
        .is_resource_server,
    ).toBe(true)

    await runBlock(exampleStep!)

    const authorizeUrl = local(/open\s+`(http:\/\/127\.0\.0\.1:3000\/oauth\/authorize\?[^`]+)`/.exec(tryIt)![1]!).replace(
      '$APP_ID',
      env.APP_ID!,
    )
    env.CODE = await authorize(s, authorizeUrl)
    await runBlock(tokenStep!)
    expect(env.TOKEN).toMatch(/^gat_/)

    await runBlock(watchStep!)

    // "Repeat step 3 with scope=…": the scope the README names, then POST /teams answers 201.
    const scope = /Repeat step 3 with `scope=([^`]+)`/.exec(tryIt)![1]!
    env.CODE = await authorize(s, authorizeUrl.replace('scope=read', `scope=${scope}`))
    // The same commands; the printed answer is step 3's, with `read` alone.
    const exchanged = await runBlock({ ...tokenStep!, text: tokenStep!.text.replace(/^# .*\n/gm, '') })
    expect(JSON.parse(exchanged).scope).toBe('read write_teams')
    const postTeams = commands(watchStep!).find((c) => c.line.includes('-X POST'))!
    expect(await bash(local(postTeams.line))).toMatch(/^HTTP\/[\d.]+ 201 /)
  })
})
