import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it, vi } from 'vitest'
import { startGatehouse } from '../helpers/gatehouse-process.js'

// Real processes, each compiling or loading the whole server at start, on a two-core machine that
// runs another test file beside this one: generous limits, since a slow start is not a failure.
vi.setConfig({ testTimeout: 120_000 })

// src/server.ts as a real process: what `npm start` runs with nothing else configured.
const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-server-'))
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

it('starts on embedded PGlite with no DATABASE_URL, serves, and exits cleanly on SIGTERM', async () => {
  const server = await startGatehouse({ DATA_DIR: dataDir })
  const ready = await fetch(`${server.url}/readyz`)
  expect(ready.status).toBe(200)
  expect(await ready.json()).toEqual({ status: 'ok', database: 'ok' })
  expect((await fetch(`${server.url}/signup`)).status).toBe(200)
  expect(await server.stop()).toBe(0)
})

it('refuses to start on a bad setting, naming the variable', () => {
  const result = spawnSync(process.execPath, ['--conditions=source', '--import', 'tsx', 'src/server.ts'], {
    cwd: join(import.meta.dirname, '../..'),
    env: { PATH: process.env.PATH ?? '', PORT: 'http', DATA_DIR: dataDir },
    encoding: 'utf8',
    timeout: 90_000,
  })
  expect(result.status).toBe(1)
  expect(result.stderr).toContain('PORT: must be a number')
})

it('`npm run migrate` (gatehouse migrate) applies the migrations, says which, and is a no-op the second time', () => {
  const migrateDir = mkdtempSync(join(tmpdir(), 'gatehouse-migrate-'))
  const migrate = () =>
    spawnSync(process.execPath, ['--conditions=source', '--import', 'tsx', 'src/cli.ts', 'migrate'], {
      cwd: join(import.meta.dirname, '../..'),
      env: { PATH: process.env.PATH ?? '', DATA_DIR: migrateDir },
      encoding: 'utf8',
      timeout: 90_000,
    })
  try {
    const first = migrate()
    expect(first.status).toBe(0)
    expect(first.stdout).toMatch(/^Success: 0001_initial$/m)
    const second = migrate()
    expect(second.status).toBe(0)
    expect(second.stdout.trim()).toBe('The database is up to date.')
  } finally {
    rmSync(migrateDir, { recursive: true, force: true })
  }
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
  const server = await startGatehouse({
    DATA_DIR: dataDir,
    NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(plant)}`,
  })
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
