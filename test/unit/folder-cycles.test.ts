import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { findCycle, findFolderCycle, folderGraph } from '../../scripts/folder-cycles.js'

/* The folder-level cycle check that `npm run lint` runs (scripts/folder-cycles.ts, docs/architecture.md). */

const made: string[] = []
afterAll(async () => {
  for (const dir of made) await rm(dir, { recursive: true, force: true })
})

/** A source tree in a temporary directory, each file given as its text. */
async function tree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'gatehouse-folders-'))
  made.push(root)
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true })
    await writeFile(join(root, path), text)
  }
  return root
}

describe('folder cycles', () => {
  it('collapses files to their top-level folder, leaving out imports within one folder and from outside', () => {
    const graph = folderGraph({
      'oauth/a.ts': ['oauth/b.ts', 'revocation/c.ts', '../packages/x.ts'],
      'config.ts': ['accounts/context.ts'],
    })
    expect(graph).toEqual(
      new Map([
        ['oauth/', new Set(['revocation/'])],
        ['config.ts', new Set(['accounts/'])],
      ]),
    )
  })

  it('finds a cycle between folders that no two files make', () => {
    const files = { 'oauth/a.ts': ['revocation/c.ts'], 'revocation/d.ts': ['oauth/b.ts'], 'oauth/b.ts': [], 'revocation/c.ts': [] }
    expect(findCycle(folderGraph(files))).toEqual(['oauth/', 'revocation/', 'oauth/'])
  })

  it('finds none in a layered graph', () => {
    const files = { 'http/a.ts': ['services.ts', 'lib/x.ts'], 'services.ts': ['oauth/b.ts'], 'oauth/b.ts': ['lib/x.ts'], 'lib/x.ts': [] }
    expect(findCycle(folderGraph(files))).toBeUndefined()
  })

  it('catches a folder cycle in TypeScript sources as madge resolves them', async () => {
    const root = await tree({
      'oauth/errors.ts': 'export class SlowDown extends Error {}\n',
      'oauth/exchange.ts': "import { revoke } from '../revocation/revoke.js'\nexport const exchange = () => revoke()\n",
      'revocation/revoke.ts': 'export const revoke = () => 1\n',
      'revocation/feed.ts': "import { SlowDown } from '../oauth/errors.js'\nexport const refuse = () => new SlowDown()\n",
    })
    expect(await findFolderCycle(root)).toEqual(['oauth/', 'revocation/', 'oauth/'])
  })

  it('passes the same sources once the cycle is cut', async () => {
    const root = await tree({
      'oauth/errors.ts': 'export class SlowDown extends Error {}\n',
      'oauth/exchange.ts': "import { revoke } from '../revocation/revoke.js'\nexport const exchange = () => revoke()\n",
      'revocation/revoke.ts': 'export const revoke = () => 1\n',
      'revocation/feed.ts': "export const refuse = () => ({ reason: 'limit' })\n",
    })
    expect(await findFolderCycle(root)).toBeUndefined()
  })

  it('finds none in src/', async () => {
    expect(await findFolderCycle('src')).toBeUndefined()
  })
})
