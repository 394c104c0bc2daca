import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'
import { ensureBuilt } from '../helpers/build.js'

/*
 * `npm start` on an unchanged checkout serves at once (docs/development.md): its prestart step
 * (scripts/build-if-stale.mjs) finds the build current, prints nothing and compiles nothing.
 * The rule itself is tested in test/unit/build-if-stale.test.ts.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

it('the prestart step leaves a current build alone, silently', async () => {
  const { scripts } = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { scripts: Record<string, string> }
  expect(scripts.prestart).toBe('node scripts/build-if-stale.mjs')
  await ensureBuilt()
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ['scripts/build-if-stale.mjs'], { cwd: ROOT })
  expect({ stdout, stderr }).toEqual({ stdout: '', stderr: '' })
}, 180_000)
