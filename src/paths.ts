import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The package root, found the same way from src/ (tsx, vitest) and from dist/src/ (node). */
function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir)
    if (parent === dir) throw new Error('package.json not found above ' + fileURLToPath(import.meta.url))
    dir = parent
  }
  return dir
}

export const ROOT_DIR = findRoot()
export const VIEWS_DIR = join(ROOT_DIR, 'views')
