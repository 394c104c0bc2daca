import { readFileSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { expect, it } from 'vitest'

/*
 * No two modules of src/ export a function of the same name, so a name found in a
 * stack trace or an import says which function it is (two `requireUser`, one a route hook
 * and one an operator look-up, were easy to mistake for each other).
 */

const root = join(import.meta.dirname, '../../src')

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

it('gives every exported function in src/ a name no other module exports', () => {
  const modulesByName = new Map<string, string[]>()
  for (const file of sources(root)) {
    for (const m of readFileSync(file, 'utf8').matchAll(/^export (?:async )?function\*? (\w+)/gm)) {
      const name = m[1]!
      modulesByName.set(name, [...(modulesByName.get(name) ?? []), relative(root, file)])
    }
  }
  expect(modulesByName.size).toBeGreaterThan(100)
  const shared = [...modulesByName].filter(([, modules]) => modules.length > 1)
  expect(shared).toEqual([])
})
