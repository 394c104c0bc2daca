import { execFile } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type AccessTokenFixture,
  type ApplicationFixture,
  createAccessToken,
  createApplication,
  createUser,
} from '../../helpers/factories.js'
import { type TestContext, buildTestApp, listenOnFreePort } from '../../helpers/app.js'

/*
 * A resource API in another repository installs `@gatehouse/verifier` from the tarball that
 * `npm pack` makes (prepack builds dist/), imports it by its package name from plain Node and
 * checks a Gatehouse token by introspection (RFC 7662). Nothing of this repository is on that
 * project's module path: only what the tarball holds and what npm installs next to it.
 */

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const PACKAGE = join(ROOT, 'packages', 'verifier')
const NPM_TIMEOUT_MS = 120_000

/** What the consumer project runs: the README's introspection-mode setup, with nothing else. */
const CHECK = `
import { createVerifier } from '@gatehouse/verifier'

const verifier = createVerifier({
  mode: 'introspection',
  introspectionUrl: \`\${process.env.GATEHOUSE_URL}/oauth/introspect\`,
  clientId: process.env.CLIENT_ID,
  clientSecret: process.env.CLIENT_SECRET,
})
const real = await verifier.verify(\`Bearer \${process.env.TOKEN}\`, 'read')
const garbage = await verifier.verify('Bearer garbage', 'read')
await verifier.close()
console.log(JSON.stringify({ resolved: import.meta.resolve('@gatehouse/verifier'), real, garbage }))
`

describe('@gatehouse/verifier installed from its tarball into another project', { timeout: 180_000 }, () => {
  let work: string
  let consumer: string
  let tarball: string
  let t: TestContext
  let gatehouse: string
  let resourceServer: ApplicationFixture
  let client: ApplicationFixture
  let token: AccessTokenFixture
  let userId: string

  beforeAll(async () => {
    work = realpathSync(mkdtempSync(join(tmpdir(), 'gatehouse-verifier-tarball-')))

    // Packed from a copy laid out like the repository (its tsconfig.json, its node_modules for
    // tsc and the type packages), not in place: prepack rebuilds dist/, and other test files
    // start processes (`node --import tsx`) that load packages/verifier/dist while this runs.
    const checkout = join(work, 'checkout')
    const copy = join(checkout, 'packages', 'verifier')
    cpSync(PACKAGE, copy, {
      recursive: true,
      filter: (src) => !['dist', 'node_modules'].includes(relative(PACKAGE, src).split(sep)[0]!),
    })
    cpSync(join(ROOT, 'tsconfig.json'), join(checkout, 'tsconfig.json'))
    symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'), 'dir')
    const packed = join(work, 'packed')
    mkdirSync(packed)
    const pack = await run('npm', ['pack', '--json', '--pack-destination', packed], { cwd: copy, timeout: NPM_TIMEOUT_MS })
    const [{ filename }] = JSON.parse(pack.stdout) as [{ filename: string }]
    tarball = join(packed, filename)

    consumer = join(work, 'resource-api')
    mkdirSync(consumer)
    writeFileSync(join(consumer, 'package.json'), JSON.stringify({ type: 'module', private: true }))
    // fastify-plugin, its one dependency, comes from the npm cache when it is there.
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], { cwd: consumer, timeout: NPM_TIMEOUT_MS })
    writeFileSync(join(consumer, 'check.mjs'), CHECK)

    t = await buildTestApp()
    gatehouse = await listenOnFreePort(t)
    const user = await createUser(t.db)
    userId = user.id
    client = await createApplication(t.db, { ownerId: user.id, name: 'Team Planner' })
    resourceServer = await createApplication(t.db, { name: 'Resource API', resourceServer: true })
    token = await createAccessToken(t.db, { userId: user.id, applicationId: client.id, scopes: ['read'] })
  }, 180_000)

  afterAll(async () => {
    await t?.close()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('holds the built dist/ (code and types), not the sources or the tests', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball])
    const files = stdout.split('\n').filter((f) => f !== '')
    expect(files).toContain('package/package.json')
    expect(files).toContain('package/README.md')
    expect(files).toContain('package/dist/index.js')
    expect(files).toContain('package/dist/index.d.ts')
    expect(files).toContain('package/dist/shared.js')
    expect(files.filter((f) => /^package\/(src|test)\//.test(f))).toEqual([])
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([])
  })

  it('verifies a Gatehouse token by introspection from the installed package', async () => {
    const { stdout } = await run(process.execPath, ['check.mjs'], {
      cwd: consumer,
      env: {
        PATH: process.env.PATH ?? '',
        GATEHOUSE_URL: gatehouse,
        CLIENT_ID: resourceServer.clientId,
        CLIENT_SECRET: resourceServer.clientSecret,
        TOKEN: token.token,
      },
      timeout: 30_000,
    })
    const out = JSON.parse(stdout) as { resolved: string; real: unknown; garbage: unknown }
    // The build in the consumer's node_modules, not this repository's sources or dist/.
    expect(fileURLToPath(out.resolved)).toBe(join(consumer, 'node_modules', '@gatehouse', 'verifier', 'dist', 'index.js'))
    expect(out.real).toEqual({
      ok: true,
      token: {
        kind: 'user',
        userId,
        subject: userId,
        clientId: client.clientId,
        applicationId: null,
        username: expect.stringMatching(/@example\.com$/),
        scopes: ['read'],
        issuedAt: Math.floor(token.createdAt.getTime() / 1000),
        expiresAt: null,
        jkt: null,
        audience: null,
      },
    })
    expect(out.garbage).toMatchObject({ ok: false, status: 401, error: 'invalid_token' })
  })
})
