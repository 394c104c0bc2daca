import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { type AddressInfo, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { afterAll, beforeAll, expect, it, vi } from 'vitest'
import { ensureBuilt } from '../helpers/build.js'
import { BUILT_CLI, BUILT_SERVER, startGatehouse } from '../helpers/gatehouse-process.js'
import { pgliteDataDir } from '../helpers/pglite-data-dir.js'

// Real processes, each compiling or loading the whole server at start, on a two-core machine that
// runs another test file beside this one: generous limits, since a slow start is not a failure.
vi.setConfig({ testTimeout: 120_000 })

const ROOT = join(import.meta.dirname, '../..')

// The built server, what `npm start` runs (it builds first: "prestart"); only `npm run migrate`
// below goes through tsx and the sources, as its script does.
beforeAll(async () => {
  await ensureBuilt()
}, 180_000)

const dataDirs: string[] = []
afterAll(() => {
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true })
})
function track(dir: string): string {
  dataDirs.push(dir)
  return dir
}

// README's first promise, `npm ci && npm start` with nothing else configured: the one test in the
// suite on a truly empty DATA_DIR, so it pays for initdb; the others start from a copy
// (test/helpers/pglite-data-dir.ts).
it('starts on embedded PGlite with no DATABASE_URL and an empty DATA_DIR, serves, and exits cleanly on SIGTERM', async () => {
  const dataDir = track(mkdtempSync(join(tmpdir(), 'gatehouse-server-')))
  // With initdb, this start took 27 s on a loaded two-core machine and once timed out at the
  // default 30 s: slow, not failed.
  const server = await startGatehouse({ DATA_DIR: dataDir }, { built: true, timeoutMs: 90_000 })
  const ready = await fetch(`${server.url}/readyz`)
  expect(ready.status).toBe(200)
  expect(await ready.json()).toEqual({ status: 'ok', database: 'ok' })
  expect((await fetch(`${server.url}/signup`)).status).toBe(200)
  expect(await server.stop()).toBe(0)
})

/*
 * HEAP_GROWING_PERCENT reaches V8 (src/server.ts): with --gc-global every collection is a full
 * one, and --trace-gc-verbose prints the factor each new old-generation limit was set with
 * (after the limit in the V8 of Node 20 and 22, before it in Node 24's).
 * Collections during module loading, before the setting is read, use V8's own factor.
 */
it("sets the old generation's growth factor from HEAP_GROWING_PERCENT, and leaves V8's own with 0", async () => {
  const factors = async (percent: string) => {
    const server = await startGatehouse(
      { DATA_DIR: track(await pgliteDataDir('migrated', 'gatehouse-heap-')), HEAP_GROWING_PERCENT: percent },
      { built: true, timeoutMs: 90_000, nodeArgs: ['--gc-global', '--trace-gc-verbose'] },
    )
    expect((await fetch(`${server.url}/signup`)).status).toBe(200)
    expect(await server.stop()).toBe(0)
    const printed = server.stdout()
    const afterLimits = [...printed.matchAll(/\[HeapController\] Limit: .*\(([\d.]+)\)$/gm)].map((m) => m[1])
    // The V8 of Node 24 no longer prints the factor after each limit, but on a line of its own
    // before it; V8's earlier line of that kind gives its own factor, not the one applied.
    return afterLimits.length > 0 ? afterLimits : [...printed.matchAll(/\[HeapController\] factor ([\d.]+) based on/gm)].map((m) => m[1])
  }
  const set = await factors('37')
  expect(set.length).toBeGreaterThan(0)
  expect(set.at(-1)).toBe('1.4')
  const v8s = await factors('0')
  expect(v8s.length).toBeGreaterThan(0)
  expect(v8s.at(-1)).not.toBe('1.4')
})

/** EX_CONFIG of sysexits(3): what only a change of configuration mends (src/server.ts, docs/operating/backups-and-upgrades.md "Operations"). */
const EX_CONFIG = 78

it('refuses to start on a bad setting, naming the variable', () => {
  // Refused while reading its settings, before the data directory is opened.
  const result = spawnSync(process.execPath, [BUILT_SERVER], {
    env: { PATH: process.env.PATH ?? '', PORT: 'http', DATA_DIR: join(tmpdir(), 'gatehouse-never-created') },
    encoding: 'utf8',
    timeout: 90_000,
  })
  expect(result.status).toBe(EX_CONFIG)
  expect(result.stderr).toContain('PORT: must be a number')
})

it('refuses to start on a scopes file it cannot use, naming the file and the problem', () => {
  const file = join(tmpdir(), `gatehouse-bad-scopes-${process.pid}.json`)
  writeFileSync(file, JSON.stringify({ scopes: [{ name: 'invoices read', description: 'See your invoices' }] }))
  try {
    const result = spawnSync(process.execPath, [BUILT_SERVER], {
      env: { PATH: process.env.PATH ?? '', SCOPES_FILE: file, DATA_DIR: join(tmpdir(), 'gatehouse-never-created') },
      encoding: 'utf8',
      timeout: 90_000,
    })
    expect(result.status).toBe(EX_CONFIG)
    expect(result.stderr).toContain(`SCOPES_FILE: Scopes file ${file}: scopes[0].name "invoices read" is not a scope token`)
  } finally {
    rmSync(file, { force: true })
  }
})

it('refuses to start on PostgreSQL without SECRET_KEY: one line saying how to make one, before the database is opened', () => {
  // Nothing listens on port 9: a server that tried the database would say so instead.
  const result = spawnSync(process.execPath, [BUILT_SERVER], {
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: 'postgres://gatehouse@127.0.0.1:9/gatehouse' },
    encoding: 'utf8',
    timeout: 90_000,
  })
  expect(result.status).toBe(EX_CONFIG)
  expect(result.stdout).toBe('')
  const lines = result.stderr.trimEnd().split('\n')
  expect(lines).toEqual([expect.stringMatching(/^SECRET_KEY is required with DATABASE_URL: generate one with /)])
  // The command it names makes a key the server accepts.
  const command = /generate one with +(node -p "[^"]+")/.exec(lines[0]!)![1]!
  const key = spawnSync('sh', ['-c', command], { encoding: 'utf8' }).stdout.trim()
  expect(key).toMatch(/^[0-9a-f]{64}$/)
})

it('ends start-up on a port already in use with one line naming it, not a stack trace', async () => {
  const taken = createServer()
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
  try {
    const port = (taken.address() as AddressInfo).port
    const result = spawnSync(process.execPath, [BUILT_SERVER], {
      env: {
        PATH: process.env.PATH ?? '',
        HOST: '127.0.0.1',
        PORT: String(port),
        DATA_DIR: track(await pgliteDataDir('migrated', 'gatehouse-port-')),
        LOG_LEVEL: 'warn',
      },
      encoding: 'utf8',
      timeout: 90_000,
    })
    expect(result.status).toBe(EX_CONFIG)
    expect(result.stdout).toBe('')
    expect(result.stderr.trimEnd().split('\n')).toEqual([
      `Gatehouse cannot listen on 127.0.0.1:${port}: the port is already in use (set PORT to another, or stop what listens there)`,
    ])
  } finally {
    await new Promise<void>((resolve) => taken.close(() => resolve()))
  }
})

/*
 * `npm run migrate` is its script in package.json run by `sh -c` with node_modules/.bin on PATH;
 * the test runs that script the same way, without npm's own second of start-up. The second run
 * is the built `gatehouse migrate`, as the Docker image has it.
 */
const migrateScript = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.migrate!

it('`npm run migrate` applies the migrations to a new database and says which; `gatehouse migrate` is then a no-op', async () => {
  // docs/development.md: `npm run migrate` applies pending migrations, here the sources through tsx.
  expect(migrateScript).toBe('tsx --conditions=source src/cli.ts migrate')
  // initdb has run and no migration has: every migration is still to apply, as on a new DATA_DIR,
  // without a second initdb (the first test pays for one; test/helpers/pglite-data-dir.ts).
  const migrateDir = track(await pgliteDataDir('initialized', 'gatehouse-migrate-'))
  const env = { PATH: [join(ROOT, 'node_modules/.bin'), process.env.PATH ?? ''].join(delimiter), DATA_DIR: migrateDir }
  const first = spawnSync('sh', ['-c', migrateScript], { cwd: ROOT, env, encoding: 'utf8', timeout: 90_000 })
  expect(first.status, first.stderr).toBe(0)
  expect(first.stdout).toMatch(/^Success: 0001_initial$/m)
  const second = spawnSync(process.execPath, [BUILT_CLI, 'migrate'], { env, encoding: 'utf8', timeout: 90_000 })
  expect(second.status, second.stderr).toBe(0)
  expect(second.stdout.trim()).toBe('The database is up to date.')
})

/*
 * The last line of defence in src/server.ts: an exception or rejection nothing caught is logged
 * once, at level fatal, and the process exits 1 for its supervisor to restart it. The fault is
 * planted by a module preloaded through NODE_OPTIONS, set off by a signal once the server runs.
 */
it.each([
  ['uncaughtException', 'SIGUSR2', 'throw new Error("planted fault")'],
  ['unhandledRejection', 'SIGHUP', 'Promise.reject(new Error("planted fault"))'],
])('an %s is logged once and ends the process with status 1', async (kind, signal, fault) => {
  const plant = `process.on(${JSON.stringify(signal)}, () => { ${fault} })`
  const server = await startGatehouse(
    {
      DATA_DIR: track(await pgliteDataDir('migrated', 'gatehouse-fault-')),
      NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(plant)}`,
    },
    { built: true },
  )
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
  process.kill(server.pid, signal)
  // Awaited, not stop(): a SIGTERM sent now could win the race and end the process cleanly.
  expect((await server.exited).code).toBe(1)
  const fatal = server
    .output()
    .split('\n')
    .filter((line) => line.includes('"level":60'))
  expect(fatal).toHaveLength(1)
  expect(JSON.parse(fatal[0]!)).toMatchObject({
    msg: `${kind}: exiting so that a supervisor restarts Gatehouse`,
    err: { message: 'planted fault' },
  })
})
