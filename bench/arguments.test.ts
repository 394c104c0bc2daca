import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
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
  expect(stdout).toContain('described in docs/performance.md "Running it"')
})

it('each bench command names a section of docs/performance.md that exists', () => {
  const guide = readFileSync(new URL('../docs/performance.md', import.meta.url), 'utf8')
  for (const command of ['run.ts', 'propagation.ts', 'instructions.ts', 'render-results.ts']) {
    const source = readFileSync(new URL(`./${command}`, import.meta.url), 'utf8')
    const section = /'docs\/performance\.md "([^"]+)"'/.exec(source)?.[1]
    expect(section, command).toBeDefined()
    expect(guide, `${command} names "${section}"`).toMatch(new RegExp(`^#{2,3} ${section}$`, 'm'))
  }
})

it('an unknown option is named, with the options, exit 2 and no stack trace', () => {
  const { status, stderr } = tsx('--bogus')
  expect(status).toBe(2)
  expect(stderr).toContain("Unknown option '--bogus'")
  expect(stderr).toContain('usage: npm run bench -- [options]')
  expect(stderr).not.toMatch(/\n\s+at /)
})
