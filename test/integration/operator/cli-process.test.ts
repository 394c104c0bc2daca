import { execFile } from 'node:child_process'
import { rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { runCli } from '../../../src/cli/run.js'
import { loadConfig } from '../../../src/config.js'
import { createDatabase } from '../../../src/db/connect.js'
import { lockDataDir } from '../../../src/db/data-dir-lock.js'
import { createServices } from '../../../src/services.js'
import { ensureBuilt } from '../../helpers/build.js'
import { createUser } from '../../helpers/factories.js'
import { runBuiltCli, startGatehouse } from '../../helpers/gatehouse-process.js'
import { pgliteDataDir } from '../../helpers/pglite-data-dir.js'

// Real processes, each compiling or loading the whole server at start, on a two-core machine that
// runs another test file beside this one: generous limits, since a slow start is not a failure.
vi.setConfig({ testTimeout: 120_000 })

/*
 * The built `gatehouse` binary (dist/src/cli.js, what the Docker image runs) as a child process,
 * with the server's environment variables, on PGlite, including commands run through the server
 * that holds the data directory (both sides in one process: cli-beside-server.test.ts; on
 * PostgreSQL: test/postgres/cli-process.test.ts).
 */

const BIN = fileURLToPath(new URL('../../../bin/gatehouse.js', import.meta.url))

const gatehouse = runBuiltCli

beforeAll(async () => {
  await ensureBuilt()
}, 180_000)

describe('on PGlite', () => {
  let dataDir: string
  // A copy of a migrated data directory (test/helpers/pglite-data-dir.ts): this is about the lock, not initdb.
  beforeAll(async () => {
    dataDir = await pgliteDataDir('migrated', 'gatehouse-cli-')
  })
  afterAll(() => {
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  })

  it('runs commands through the running server, as they run alone, and opens the database itself once it is gone', async () => {
    const seed = await createDatabase({ dataDir })
    await createUser(seed.db, { email: 'pglite-operator@example.com', emailVerified: true })
    await seed.close()
    const env = { DATA_DIR: dataDir }
    const socket = join(dataDir, 'control', 'cli.sock')

    let server = await startGatehouse(env, { built: true })
    // Only the server's user may reach the socket (docs/operating/command-line.md "Beside a running server").
    expect(statSync(join(dataDir, 'control')).mode & 0o777).toBe(0o700)
    expect(statSync(socket).mode & 0o777).toBe(0o600)
    let beside
    try {
      beside = {
        add: await gatehouse(env, 'admin', 'add', 'pglite-operator@example.com'),
        list: await gatehouse(env, 'users', 'list', '--json'),
        unknown: await gatehouse(env, 'users', 'show', 'nobody@example.com'),
      }
    } finally {
      // Killed: its lock file and its socket stay behind.
      expect((await server.kill()).signal).toBe('SIGKILL')
    }
    expect(statSync(socket).isSocket()).toBe(true)
    expect(beside.add).toEqual({ code: 0, stdout: 'pglite-operator@example.com is now an operator.\n', stderr: '' })
    expect(beside.unknown).toEqual({ code: 1, stdout: '', stderr: 'gatehouse: No user has the email nobody@example.com.\n' })

    // With no server, the command line takes the data directory over, as before: same answers,
    // and "already", since the command run by the server was written.
    expect(await gatehouse(env, 'users', 'list', '--json')).toEqual(beside.list)
    expect(await gatehouse(env, 'users', 'show', 'nobody@example.com')).toEqual(beside.unknown)
    expect(await gatehouse(env, 'admin', 'add', 'pglite-operator@example.com')).toEqual({
      code: 0,
      stdout: 'pglite-operator@example.com is already an operator.\n',
      stderr: '',
    })

    // The socket the killed server left does not stop the next start, which answers on a new one.
    server = await startGatehouse(env, { built: true })
    try {
      expect(await gatehouse(env, 'admin', 'remove', 'pglite-operator@example.com')).toEqual({
        code: 0,
        stdout: 'pglite-operator@example.com is no longer an operator.\n',
        stderr: '',
      })
    } finally {
      expect(await server.stop()).toBe(0)
    }
    expect(() => statSync(socket)).toThrow(/ENOENT/)

    const after = await createDatabase({ dataDir })
    const events = await after.db.selectFrom('audit_events').select(['event', 'detail']).orderBy('occurred_at').execute()
    await after.close()
    // The server's commands recorded as the command line's own.
    expect(events).toEqual([
      { event: 'operator.added', detail: 'From the command line' },
      { event: 'operator.removed', detail: 'From the command line' },
    ])
  })

  it('refuses plainly while another command holds the data directory, and changes nothing', async () => {
    // This test process holds the lock, as a command would, and answers no socket.
    const unlock = lockDataDir(dataDir)
    let refused
    try {
      refused = await gatehouse({ DATA_DIR: dataDir }, 'admin', 'add', 'pglite-operator@example.com')
    } finally {
      unlock()
    }
    expect(refused.code).toBe(1)
    expect(refused.stdout).toBe('')
    expect(refused.stderr).toMatch(
      /^gatehouse: The embedded database in .* is in use by another Gatehouse process \(pid \d+\).*nothing was changed\.\n$/,
    )
    // "now", not "already": the refused command left the user as it was.
    expect((await gatehouse({ DATA_DIR: dataDir }, 'admin', 'add', 'pglite-operator@example.com')).stdout).toBe(
      'pglite-operator@example.com is now an operator.\n',
    )
  })

  it('runs from a checkout as bin/gatehouse.js, on the sources', async () => {
    const run = await new Promise<{ code: number; stdout: string }>((resolve) =>
      execFile(process.execPath, [BIN, '--help'], { env: { PATH: process.env.PATH ?? '' } }, (err, stdout) =>
        resolve({ code: err ? 1 : 0, stdout }),
      ),
    )
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('apps resource-server <client_id> on|off')
  })
})

describe('with DATABASE_URL and no SECRET_KEY', () => {
  // Nothing listens on port 9: a command that tried the database would say so instead.
  const env = { DATABASE_URL: 'postgres://gatehouse@127.0.0.1:9/gatehouse', SECRET_KEY: '' }
  const refusal = /^gatehouse: SECRET_KEY is required with DATABASE_URL: generate one with [^\n]+\n$/

  /*
   * The process shows what src/cli.ts adds: the environment read as the server reads it, the one
   * line on stderr and the exit code. Which commands open the database, and so are refused, is the
   * command line's own behaviour: run in this process as src/cli.ts runs it (services built
   * with role 'cli' from that environment), with no process to start per command.
   */
  it("refuses every command that opens the database with the server's one line, before connecting", async () => {
    expect(await gatehouse(env, 'keys', 'list')).toMatchObject({ code: 1, stdout: '', stderr: expect.stringMatching(refusal) })
    for (const args of [['migrate'], ['admin', 'add', 'first@example.com'], ['keys', 'list']]) {
      const run = await inProcess(env, args)
      expect(run, args.join(' ')).toMatchObject({ code: 1, stdout: '' })
      expect(run.stderr).toMatch(refusal)
    }
  })

  it('still runs what needs no database: --help and the outbox', async () => {
    expect(await inProcess(env, ['--help'])).toMatchObject({ code: 0, stdout: expect.stringContaining('admin add <email>') })
    expect(await gatehouse({ ...env, MAIL_OUTBOX_DIR: '/nonexistent-gatehouse-outbox' }, 'outbox')).toEqual({
      code: 0,
      stdout: 'No mail in /nonexistent-gatehouse-outbox.\n',
      stderr: '',
    })
  })
})

/** `gatehouse …` as src/cli.ts runs it, in this process: `env` is the whole environment; console.log and console.error each end a line. */
async function inProcess(env: Record<string, string>, argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const config = loadConfig(env)
  const code = await runCli(
    argv,
    { open: () => createServices(config, { role: 'cli' }), mail: config.mail },
    { out: (text) => (stdout += `${text}\n`), err: (text) => (stderr += `${text}\n`) },
  )
  return { code, stdout, stderr }
}
