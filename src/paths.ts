import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
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

/**
 * The browser build of @simplewebauthn/browser (one file, no imports), which the passkey pages
 * load from Gatehouse itself (src/http/routes/static.ts). The package exports only its modules,
 * so the bundle is found next to the entry point Node resolves.
 */
export const WEBAUTHN_BROWSER_SCRIPT = join(
  dirname(createRequire(import.meta.url).resolve('@simplewebauthn/browser')),
  '..',
  'dist',
  'bundle',
  'index.umd.min.js',
)
