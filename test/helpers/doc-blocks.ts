import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { expect } from 'vitest'
import { consentFields } from '../integration/oauth/helpers.js'
import type { TestContext } from './app.js'
import type { BrowserSession } from './browser-session.js'
import { freePort } from './gatehouse-process.js'
import { NOTICE_WAIT_MS, msUntil } from './propagation.js'
import { runCliOn } from './cli.js'

/*
 * The command blocks of the README and the guides in docs/, run as printed (docs/development.md
 * "Documentation"), so the documents cannot drift from the product. Blocks are read from the
 * files, never copied into tests. A reader's addresses are replaced as a reader on other ports
 * would replace them: http://127.0.0.1:3000 is the test's Gatehouse, port 4000 the example
 * resource API's, port 4001 the example relying party's, port 4002 the example MCP server's.
 *
 * How a block runs: each command (continuation lines joined) goes to bash with the values the
 * walk produced so far in its environment (RS_ID, APP_ID, CODE, TOKEN …). `npx gatehouse …` is
 * the command line, run in this process against the test's database (its words split by bash,
 * exactly as the shell would pass them), since the embedded database belongs to this process.
 * `npm run example:…`, alone or followed by `&`, starts in the background until the test ends.
 * Comment lines after a command are what it prints: `# NNN, text` a status (curl -i) and text in
 * the response, `# text` text in the output; `…` stands for anything, a trailing `(…)` is prose.
 * `NAME=gat_…` is the reader pasting a value from the previous output (or, when it is not there,
 * from a page the test walked through as the prose says); `NAME=…` a value from such a page;
 * `NAME=$(…)` a value the shell computes, kept for the commands after it.
 */

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** A fenced command block (```sh, ```bash, ```shell, ```console) of a document. */
export interface Block {
  /** Relative to the repository root, e.g. `docs/oauth-endpoints.md`. */
  file: string
  /** The headings it stands under, outermost first. */
  headings: string[]
  /** The block's text, without the fence and the list item's indentation. */
  text: string
}

/** README.md and every Markdown file under docs/ but the decision records. */
export function documents(): string[] {
  const out = ['README.md']
  const walk = (dir: string): void => {
    for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = join(dir, e.name)
      if (e.isDirectory() && path !== join('docs', 'decisions')) walk(path)
      else if (e.isFile() && e.name.endsWith('.md')) out.push(path)
    }
  }
  walk('docs')
  return out.map((p) => p.split('\\').join('/')).sort()
}

export function readDocument(file: string): string {
  return readFileSync(join(ROOT, file), 'utf8')
}

/** Every command block of one document, with the headings above it. */
export function commandBlocks(file: string): Block[] {
  const blocks: Block[] = []
  const headings: { level: number; title: string }[] = []
  const lines = readDocument(file).split('\n')
  for (let i = 0; i < lines.length; i++) {
    const heading = /^(#{1,6}) (.*)$/.exec(lines[i]!)
    if (heading) {
      const level = heading[1]!.length
      while (headings.length > 0 && headings.at(-1)!.level >= level) headings.pop()
      headings.push({ level, title: heading[2]! })
      continue
    }
    const fence = /^( *)```(\w*)\s*$/.exec(lines[i]!)
    if (!fence) continue
    const end = lines.findIndex((l, j) => j > i && /^ *```\s*$/.test(l))
    const body = lines.slice(i + 1, end < 0 ? undefined : end)
    if (['sh', 'bash', 'shell', 'console', 'zsh'].includes(fence[2]!)) {
      const indent = fence[1]!
      blocks.push({
        file,
        headings: headings.map((h) => h.title),
        text: body
          .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
          .join('\n')
          .trimEnd(),
      })
    }
    i = end < 0 ? lines.length : end
  }
  return blocks
}

/** The command blocks under the heading `title` of `file`, at any depth. */
export function blocksUnder(file: string, title: string): Block[] {
  return commandBlocks(file).filter((b) => b.headings.includes(title))
}

/** The text of the section under the heading `title`: up to the next heading of the same or a higher level. */
export function section(file: string, title: string): string {
  const lines = readDocument(file).split('\n')
  // A command block's comment lines start with `# ` too: only lines outside fences are headings.
  let inFence = false
  const level = lines.map((l) => {
    if (/^ *```/.test(l)) inFence = !inFence
    return !inFence && /^#{1,6} /.test(l) ? /^#+/.exec(l)![0].length : 0
  })
  const start = lines.findIndex((l, i) => level[i]! > 0 && l.replace(/^#+ /, '') === title)
  if (start < 0) throw new Error(`${file} has no section "${title}"`)
  const end = lines.findIndex((_, i) => i > start && level[i]! > 0 && level[i]! <= level[start]!)
  return lines.slice(start, end < 0 ? undefined : end).join('\n')
}

/** A block's first command line, its trailing comment removed: how EXEMPT names it. */
export function firstLine(block: Block): string {
  return block.text.split('\n')[0]!.replace(/ +#.*$/, '')
}

/**
 * The sections whose command blocks a test under test/integration/docs/ runs, by document.
 * A block elsewhere must be exempt by name (EXEMPT) or written as ```text.
 */
export const RUN: Record<string, string[]> = {
  'README.md': ['A ten-minute tour'],
  'docs/accounts.md': ["Lost second factor: the operator's reset", 'Mail'],
  'docs/operating/admin.md': ['The first operator'],
  'docs/oauth-endpoints.md': [
    'Discovery: `GET /.well-known/oauth-authorization-server` (RFC 8414)',
    '`POST /oauth/token`',
    '`POST /oauth/revoke` (RFC 7009)',
  ],
  'docs/performance.md': ['Running it', 'Result files', 'Revocation propagation', 'Instructions per request'],
  'docs/openid-connect.md': ['Keys and rotation', 'Try it: the example relying party'],
  'docs/resource-apis.md': ['`POST /oauth/introspect` (RFC 7662)', '`GET /oauth/token/info`', 'Try it: the example resource API'],
  'docs/agents.md': ["Try it: an MCP server and the MCP SDK's client"],
}

/** Blocks no test runs, by their first line, each with the reason; kept short on purpose. */
export const EXEMPT: Record<string, string> = {
  'npm ci':
    'installs a whole checkout (minutes, the network); test/integration/server-process.test.ts and start-without-rebuild.test.ts start the server as npm start does',
  'npm pack -w @gatehouse/verifier':
    'builds and packs in the checkout and installs from the registry; verifier-tarball.test.ts packs and installs the tarball into another project',
  'git clone <gatehouse-repository> /path/to/gatehouse':
    'a clone of a placeholder and npm ci of a whole checkout (minutes, the network); the install of the built package is what verifier-tarball.test.ts checks',
  'curl -N -u "$RS_ID:$RS_SECRET" "$AUTH/oauth/revocations/stream"':
    'streams until stopped; test/integration/resource/ reads the stream event by event',
  'echo "SECRET_KEY=$(openssl rand -hex 32)" > .env': 'needs a Docker engine; test/postgres/docker-compose.test.ts walks the compose file',
  'docker compose exec gatehouse gatehouse outbox --last': 'needs a Docker engine; as above',
  'docker compose exec gatehouse gatehouse admin add you@example.com': 'needs a Docker engine; as above',
  'TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm test': 'the whole suite, from inside the suite',
}

interface Command {
  line: string
  expected: string[]
}

/** A block's commands, continuation lines joined, each with the comment lines that follow it. */
export function commands(block: Pick<Block, 'text'>): Command[] {
  const out: Command[] = []
  let pending = ''
  for (const raw of block.text.split('\n')) {
    if (pending === '' && raw.startsWith('# ')) {
      if (out.length === 0) throw new Error(`a block starts with a comment, not a command:\n${block.text}`)
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
export function pattern(text: string, anything = '[\\s\\S]*?'): RegExp {
  return new RegExp(
    text
      .split('…')
      .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join(anything),
    'i',
  )
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

/**
 * A reader's addresses in `text` moved to a test's ports, in one pass: replaced one after
 * another, a free port such as 40023 put in by the first would be taken for the reader's 4002.
 */
export function moveAddresses(text: string, at: { gatehouse: string; apiPort: number; rpPort: number; mcpPort: number }): string {
  const moved: Record<string, string> = {
    'http://127.0.0.1:3000': at.gatehouse,
    '127.0.0.1:4000': `127.0.0.1:${at.apiPort}`,
    'localhost:4001': `localhost:${at.rpPort}`,
    '127.0.0.1:4002': `127.0.0.1:${at.mcpPort}`,
    'PORT=4000': `PORT=${at.apiPort}`,
    'PORT=4001': `PORT=${at.rpPort}`,
    'PORT=4002': `PORT=${at.mcpPort}`,
  }
  return text.replace(
    /http:\/\/127\.0\.0\.1:3000(?!\d)|127\.0\.0\.1:400[02](?!\d)|localhost:4001(?!\d)|\bPORT=400[012](?!\d)/g,
    (m) => moved[m]!,
  )
}

/** Runs blocks as a reader would, against a test's Gatehouse listening at `gatehouse`. */
export class DocRunner {
  /** The reader's shell variables so far. */
  readonly env: Record<string, string> = {}
  private readonly background: ChildProcess[] = []

  private constructor(
    private readonly t: TestContext,
    readonly gatehouse: string,
    readonly apiPort: number,
    readonly rpPort: number,
    readonly mcpPort: number,
  ) {}

  /** `t` must listen at `gatehouse`, which is its PUBLIC_URL. */
  static async create(t: TestContext, gatehouse: string): Promise<DocRunner> {
    return new DocRunner(t, gatehouse, await freePort(), await freePort(), await freePort())
  }

  /** The reader's addresses, moved to where this test listens. */
  local(text: string): string {
    return moveAddresses(text, this)
  }

  private shellEnv(): Record<string, string> {
    return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? ROOT, ...this.env }
  }

  async bash(line: string): Promise<string> {
    const { stdout } = await promisify(execFile)('bash', ['-c', line], { cwd: ROOT, env: this.shellEnv(), timeout: 30_000 })
    return stdout
  }

  private async gatehouseCli(line: string): Promise<string> {
    // bash splits and expands the words, as it would for npx.
    const words = (await this.bash(`printf '%s\\0' ${line.replace(/^npx gatehouse /, '')}`)).split('\0').slice(0, -1)
    const { code, out, err } = await runCliOn(this.t, words)
    expect(code, `${line}: ${err}`).toBe(0)
    return out
  }

  /** Starts an example in the background; its output once it printed `ready`. */
  private async startInBackground(line: string, ready: string): Promise<string> {
    let output = ''
    // The examples' defaults name the reader's ports and Gatehouse; the test's stand in for them.
    const port = /example:relying-party/.test(line) ? this.rpPort : /example:mcp/.test(line) ? this.mcpPort : this.apiPort
    const child = spawn('bash', ['-c', line], {
      cwd: ROOT,
      env: { PORT: String(port), GATEHOUSE_URL: this.gatehouse, GATEHOUSE_ISSUER: this.gatehouse, ...this.shellEnv() },
      detached: true,
    })
    this.background.push(child)
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

  /** `NAME=…`, `NAME=gat_…`: the value the reader copies, from the output before or a page walked through. */
  private paste(name: string, shape: string, previous: string): void {
    const value = shape === '…' ? undefined : pattern(shape, '[A-Za-z0-9_-]+').exec(previous)?.[0]
    if (value !== undefined) {
      this.env[name] = value
      return
    }
    const given = this.env[name]
    expect(given, `${name}=${shape}: nothing to paste in ${previous}`).toBeDefined()
    expect(given).toMatch(new RegExp(`^${pattern(shape, '[A-Za-z0-9_-]+').source}$`))
  }

  /** Runs one command of a block as printed; its output. */
  private async runCommand(command: Command, previous: string): Promise<string> {
    const line = this.local(command.line.replace(/ +# .*$/, ''))
    const paste = /^([A-Z_]+)=(\S*…\S*)$/.exec(line)
    if (paste) {
      this.paste(paste[1]!, paste[2]!, previous)
      return previous
    }
    const assignment = /^([A-Z_]+)=(\$\(.*\))$/.exec(line)
    if (assignment) {
      this.env[assignment[1]!] = (await this.bash(`${line}; printf '%s' "$${assignment[1]}"`)).trim()
      expect(this.env[assignment[1]!], line).not.toBe('')
      return previous
    }
    if (line.startsWith('npx gatehouse ')) {
      const output = await this.gatehouseCli(line)
      for (const e of command.expected) expectOutput(output, this.local(e))
      return output
    }
    const example = /^(.*\bnpm run example:[\w-]+)(?: &)?$/.exec(line)
    if (example) {
      const ready = this.local(command.expected[0] ?? '')
      expect(ready, 'the example says where it listens').toMatch(/^Example .* on /)
      return this.startInBackground(example[1]!, ready)
    }
    // A revocation reaches the example's cache through its notice (docs/resource-apis.md "How
    // caches stay honest"), so a check of what a command prints may be repeated until it has:
    // NOTICE_WAIT_MS is a safety net for a busy machine, not the one-second target.
    let output = ''
    await msUntil(
      async () => {
        output = await this.bash(line)
        try {
          for (const e of command.expected) expectOutput(output, this.local(e))
          return true
        } catch {
          return false
        }
      },
      NOTICE_WAIT_MS,
      performance.now(),
      20,
    ).catch(() => {})
    for (const e of command.expected) expectOutput(output, this.local(e))
    return output
  }

  /** Runs every command of the block in order; the last one's output. */
  async runBlock(block: Pick<Block, 'text'>): Promise<string> {
    let previous = ''
    for (const command of commands(block)) previous = await this.runCommand(command, previous)
    return previous
  }

  /** The code the reader copies from the address bar after Authorize, for this authorize URL. */
  async authorize(s: BrowserSession, url: string): Promise<string> {
    const page = await s.get(url.replace(this.gatehouse, ''))
    // A consent given before is remembered: then the answer is the redirect with the code.
    expect([200, 302], page.body.slice(0, 300)).toContain(page.statusCode)
    const res = page.statusCode === 302 ? page : await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
    const code = new URL(String(res.headers.location)).searchParams.get('code')
    expect(code, String(res.headers.location)).toBeTruthy()
    return code!
  }

  /** Stops what the blocks started in the background: the whole group, bash, npm and the example under it. */
  async close(): Promise<void> {
    for (const child of this.background) {
      if (child.exitCode !== null) continue
      const exited = new Promise((resolve) => child.once('exit', resolve))
      process.kill(-child.pid!, 'SIGTERM')
      await exited
    }
  }
}

/** Every relative link of a document, with the file it names (from the root) and its anchor. */
export function relativeLinks(file: string): { href: string; target: string; anchor: string }[] {
  const text = readDocument(file).replace(/^ *```[\s\S]*?^ *```$/gm, '')
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((href) => !/^[a-z]+:/i.test(href))
    .map((href) => {
      const [path, anchor = ''] = href.split('#')
      const target =
        path === ''
          ? file
          : relative(ROOT, join(ROOT, file, '..', path!))
              .split('\\')
              .join('/')
      return { href, target, anchor }
    })
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replaceAll(' ', '-')
}
