import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, statSync, writeFileSync, readFileSync } from 'node:fs'
import { type Socket, connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { forwardToServer } from '../../../src/cli/control-client.js'
import { type ControlSocket, answerCommands } from '../../../src/cli/control-server.js'
import { controlSocketPath } from '../../../src/cli/control-socket.js'
import { runCli } from '../../../src/cli/run.js'
import { DataDirInUseError } from '../../../src/db/index.js'
import { createServices } from '../../../src/services.js'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { createUser } from '../../helpers/factories.js'

/*
 * The command line beside a running embedded server (src/cli/control-socket.ts), both sides in
 * this process over a real Unix socket: the server's side answering with the test app's services,
 * the command line's side reached as src/cli.ts reaches it, when the data directory's lock is
 * held. The built server and command line as processes: cli-process.test.ts.
 */

let t: TestContext
let dataDir: string
let commands: ControlSocket | undefined
const warnings: unknown[] = []
const log = { info: () => {}, warn: (fields: unknown) => void warnings.push(fields) } as never

const listen = () => answerCommands({ dataDir, services: t.deps, mail: t.config.mail, log })

beforeAll(async () => {
  t = await buildTestApp()
})
afterAll(async () => {
  await t.close()
})
beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-control-'))
})
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))
afterEach(async () => {
  await commands?.close()
  commands = undefined
  warnings.length = 0
})

type Run = { code: number; out: string; err: string }

/** `gatehouse …` as src/cli.ts runs it while the server holds the embedded database. */
async function besideServer(...argv: string[]): Promise<Run> {
  return capture((io) =>
    runCli(
      argv,
      {
        open: () => Promise.reject(new DataDirInUseError(dataDir, 1)),
        mail: t.config.mail,
        forward: (args, forwardIo) => forwardToServer(dataDir, args, forwardIo),
      },
      io,
    ),
  )
}

/** The same command run alone, on its own services over the same database. */
async function alone(...argv: string[]): Promise<Run> {
  const open = () => createServices(t.config, { role: 'cli', database: t.testDb.handle, clock: t.clock })
  return capture((io) => runCli(argv, { open, mail: t.config.mail }, io))
}

async function capture(run: (io: { out(s: string): void; err(s: string): void }) => Promise<number>): Promise<Run> {
  const out: string[] = []
  const err: string[] = []
  const code = await run({ out: (s) => out.push(s), err: (s) => err.push(s) })
  return { code, out: out.join('\n'), err: err.join('\n') }
}

/** What the server answers to raw bytes sent on its socket, until it closes the connection. */
function rawExchange(send: (socket: Socket) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = ''
    const socket = connect(controlSocketPath(dataDir), () => send(socket))
    socket.setEncoding('utf8')
    socket.on('data', (d: string) => (answer += d))
    socket.on('error', reject)
    socket.on('close', () => resolve(answer))
  })
}

describe('the socket', () => {
  it("is DATA_DIR/control/cli.sock, in a directory only the server's user may enter, and gone once closed", async () => {
    commands = await listen()
    const path = controlSocketPath(dataDir)
    expect(commands?.path).toBe(path)
    expect(statSync(join(dataDir, 'control')).mode & 0o777).toBe(0o700)
    expect(statSync(path).isSocket()).toBe(true)
    expect(statSync(path).mode & 0o777).toBe(0o600)
    await commands!.close()
    commands = undefined
    expect(() => statSync(path)).toThrow(/ENOENT/)
  })

  it('replaces a socket left by a killed server, and leaves anything else alone', async () => {
    const path = controlSocketPath(dataDir)
    commands = await listen()
    await commands!.close()
    // A process killed while listening leaves its socket behind, with nobody answering on it.
    const child = `require('node:net').createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, 'SIGKILL'))`
    await promisify(execFile)(process.execPath, ['-e', child]).catch(() => {})
    expect(statSync(path).isSocket()).toBe(true)
    expect(await forwardToServer(dataDir, ['users', 'list'], { out: () => {}, err: () => {} })).toBeUndefined()

    commands = await listen()
    expect(commands).toBeDefined()
    expect(await besideServer('admin', 'list')).toEqual(await alone('admin', 'list'))
    await commands!.close()

    writeFileSync(path, 'not a socket')
    commands = await listen()
    expect(commands).toBeUndefined()
    expect(warnings).toEqual([{ reason: `${path} exists and is not a socket` }])
    expect(readFileSync(path, 'utf8')).toBe('not a socket')
    rmSync(path)
  })
})

describe('commands beside the server', () => {
  beforeAll(async () => {
    await createUser(t.db, { email: 'beside-ops@example.com', emailVerified: true })
  })

  it('print what they print alone, with the same exit code', async () => {
    commands = await listen()
    for (const argv of [
      ['users', 'list'],
      ['users', 'list', '--json'],
      ['users', 'show', 'nobody@example.com'],
      ['keys', 'list'],
    ]) {
      expect(await besideServer(...argv), argv.join(' ')).toEqual(await alone(...argv))
    }
    expect((await besideServer('users', 'show', 'nobody@example.com')).err).toBe('gatehouse: No user has the email nobody@example.com.')
  })

  it('act on the database with the audit event of the command line', async () => {
    commands = await listen()
    expect(await besideServer('admin', 'add', 'beside-ops@example.com')).toEqual({
      code: 0,
      out: 'beside-ops@example.com is now an operator.',
      err: '',
    })
    expect((await alone('admin', 'add', 'beside-ops@example.com')).out).toBe('beside-ops@example.com is already an operator.')
    const events = await t.db.selectFrom('audit_events').select(['event', 'detail']).where('event', '=', 'operator.added').execute()
    expect(events).toEqual([{ event: 'operator.added', detail: 'From the command line' }])
  })

  it('several sent at once are each answered, on their own connection', async () => {
    commands = await listen()
    const argvs = [
      ['admin', 'list'],
      ['users', 'list', '--json'],
      ['users', 'show', 'beside-ops@example.com'],
      ['apps', 'list'],
    ]
    const together = await Promise.all(argvs.map((argv) => besideServer(...argv)))
    for (const [i, argv] of argvs.entries()) expect(together[i], argv.join(' ')).toEqual(await alone(...argv))
  })

  it('refuses migrate, which needs the database to itself, in one line', async () => {
    commands = await listen()
    const refused = await besideServer('migrate')
    expect(refused).toMatchObject({ code: 1, out: '' })
    expect(refused.err).toMatch(/^gatehouse: migrate does not run beside the running server, .*stop it and run gatehouse migrate$/)
  })

  it('answers a malformed or oversized request with an error and goes on answering', async () => {
    commands = await listen()
    const refusal = (why: string) => `{"err":"gatehouse: ${why}"}\n{"exit":1}\n`
    const malformed = refusal('malformed request: expected one line of {\\"argv\\": [strings]}')
    for (const line of [
      'garbage',
      '{"argv": "users list"}',
      '{"argv": [1, 2]}',
      '[]',
      'null',
      `{"argv": ${JSON.stringify(Array(65).fill('x'))}}`,
    ]) {
      expect(await rawExchange((s) => s.write(`${line}\n`)), line).toBe(malformed)
    }
    expect(await rawExchange((s) => s.write('x'.repeat(20_000)))).toBe(refusal('request longer than 16384 characters'))
    // A client that goes away before its answer.
    await rawExchange((s) => s.end(`${JSON.stringify({ argv: ['users', 'list'] })}\n`))
    expect(await besideServer('admin', 'list')).toMatchObject({ code: 0 })
    // Why a request was refused, never what it said.
    expect(warnings).toHaveLength(7)
    expect(JSON.stringify(warnings)).not.toContain('garbage')
  })
})

describe('with no server answering', () => {
  it('the lock is refused as before: nothing is sent', async () => {
    const refused = await besideServer('admin', 'list')
    expect(refused).toMatchObject({ code: 1, out: '' })
    expect(refused.err).toMatch(/^gatehouse: The embedded database in .* is in use by another Gatehouse process \(pid 1\)/)
  })
})
