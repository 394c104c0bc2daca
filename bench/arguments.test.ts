import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'

/* `npm run bench -- --help` prints the options; a wrong one says so in a line, never a stack trace. */

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const tsx = (...args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', '--conditions=source', 'bench/run.ts', ...args], { cwd: ROOT, encoding: 'utf8' })

it('--help lists the options and where they are described, and exits 0', () => {
  const { status, stdout } = tsx('--help')
  expect(status).toBe(0)
  expect(stdout).toContain('usage: npm run bench -- [options]')
  expect(stdout).toContain('  --only VALUE')
  expect(stdout).toContain('described in README "Performance"')
})

it('an unknown option is named, with the options, exit 2 and no stack trace', () => {
  const { status, stderr } = tsx('--bogus')
  expect(status).toBe(2)
  expect(stderr).toContain("Unknown option '--bogus'")
  expect(stderr).toContain('usage: npm run bench -- [options]')
  expect(stderr).not.toMatch(/\n\s+at /)
})
