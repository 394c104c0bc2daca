import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DocGatehouse, startDocGatehouse } from '../../helpers/doc-gatehouse.js'
import { type DocRunner, RUN, blocksUnder } from '../../helpers/doc-blocks.js'

/*
 * The command blocks of docs/performance.md, run as printed (test/helpers/doc-blocks.ts says
 * how): each shows a benchmark's options, which a reader runs before a run of many minutes. The
 * runs themselves are `npm run bench` and its siblings, never part of the suite.
 */

const GUIDE = 'docs/performance.md'
let runner: DocRunner

let docs: DocGatehouse

beforeAll(async () => {
  docs = await startDocGatehouse()
  runner = docs.runner
})

afterAll(() => docs?.close())

describe(GUIDE, { timeout: 120_000 }, () => {
  it.each(RUN[GUIDE]!)('"%s": the options print as shown', async (title) => {
    const blocks = blocksUnder(GUIDE, title)
    expect(blocks.length).toBeGreaterThan(0)
    for (const block of blocks) expect(await runner.runBlock(block)).toMatch(/^usage: npm run bench/m)
  })
})
