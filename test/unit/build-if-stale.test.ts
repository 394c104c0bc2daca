import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { OUTPUTS, SOURCES, staleBuild } from '../../scripts/build-if-stale.mjs'

/*
 * The rule `npm start` builds by (scripts/build-if-stale.mjs, docs/development.md): only when
 * an output is missing or older than a source, so a start on an unchanged clone does not compile.
 */

const roots: string[] = []
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

/** A checkout with every source and output, each written at `at` (seconds since the epoch). */
function checkout(at: number): string {
  const root = mkdtempSync(join(tmpdir(), 'gatehouse-build-'))
  roots.push(root)
  for (const path of [...SOURCES.map((s) => (s.endsWith('.json') ? s : `${s}/index.ts`)), ...OUTPUTS]) write(root, path, at)
  return root
}

function write(root: string, path: string, at: number): void {
  mkdirSync(dirname(join(root, path)), { recursive: true })
  writeFileSync(join(root, path), '')
  utimesSync(join(root, path), at, at)
}

it('needs no build when every output is at least as new as every source', () => {
  expect(staleBuild(checkout(1_700_000_000))).toBeUndefined()
})

it('builds when an output is missing', () => {
  const root = checkout(1_700_000_000)
  rmSync(join(root, 'dist/src/cli.js'))
  expect(staleBuild(root)).toBe('dist/src/cli.js is missing')
})

it('builds when a source deep in a folder is newer than an output', () => {
  const root = checkout(1_700_000_000)
  write(root, 'src/oauth/token/new-grant.ts', 1_700_000_100)
  expect(staleBuild(root)).toBe('dist/src/server.js is older than the sources')
})

it("builds when the verifier's sources changed, which the server's build includes", () => {
  const root = checkout(1_700_000_000)
  write(root, 'packages/verifier/src/core.ts', 1_700_000_100)
  expect(staleBuild(root)).toMatch(/is older than the sources$/)
})
