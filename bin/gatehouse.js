#!/usr/bin/env node
// `gatehouse …` (README "Operating Gatehouse"). In a checkout, the TypeScript sources through
// tsx, so the command is never older than the code; where there are no sources (the Docker
// image), the build.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const source = fileURLToPath(new URL('../src/cli.ts', import.meta.url))
let loader
try {
  loader = existsSync(source) ? import.meta.resolve('tsx') : undefined
} catch {
  loader = undefined
}

if (loader) {
  const run = spawnSync(process.execPath, ['--conditions=source', '--import', loader, source, ...process.argv.slice(2)], {
    stdio: 'inherit',
  })
  process.exit(run.status ?? 1)
} else {
  await import(new URL('../dist/src/cli.js', import.meta.url).href)
}
