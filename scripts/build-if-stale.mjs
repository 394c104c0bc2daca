// `npm start` runs this first ("prestart" in package.json): it builds dist/ only when a source is
// newer than what the build produced, so that a start on an unchanged clone serves at once
// instead of compiling for half a minute. Plain JavaScript, so that it needs no compiler to run.
// The tests that start the built server use the same rule (test/helpers/build.ts).
import { spawnSync } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { URL, fileURLToPath } from 'node:url'
import process from 'node:process'
import console from 'node:console'

/** What `npm run build` compiles. */
export const SOURCES = [
  'src',
  'migrations',
  'packages/verifier/src',
  'tsconfig.json',
  'tsconfig.build.json',
  'packages/verifier/tsconfig.build.json',
]

/** What it produces that a started server and the command line load. */
export const OUTPUTS = ['dist/src/server.js', 'dist/src/cli.js', 'packages/verifier/dist/index.js', 'packages/verifier/dist/shared.js']

/** Modification time of a file, or of the newest file below a directory; 0 if absent. */
function newest(path) {
  let stat
  try {
    stat = statSync(path)
  } catch {
    return 0
  }
  if (!stat.isDirectory()) return stat.mtimeMs
  let latest = 0
  for (const entry of readdirSync(path)) latest = Math.max(latest, newest(join(path, entry)))
  return latest
}

/**
 * Why the build under `root` cannot be used as it is, or undefined when it is current.
 * @param {string} root
 * @returns {string | undefined}
 */
export function staleBuild(root) {
  const sourceTime = Math.max(...SOURCES.map((p) => newest(join(root, p))))
  for (const output of OUTPUTS) {
    const t = newest(join(root, output))
    if (t === 0) return `${output} is missing`
    if (t < sourceTime) return `${output} is older than the sources`
  }
  return undefined
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('../', import.meta.url))
  const reason = staleBuild(root)
  if (reason !== undefined) {
    console.log(`Building Gatehouse first (${reason}); later starts skip this until a source changes.`)
    const built = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' })
    process.exit(built.status ?? 1)
  }
}
