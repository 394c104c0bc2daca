import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { DocRunner, RUN, blocksUnder } from '../../helpers/doc-blocks.js'
import { freePort } from '../../helpers/gatehouse-process.js'

/*
 * The command blocks of docs/performance.md, run as printed (test/helpers/doc-blocks.ts says
 * how): each shows a benchmark's options, which a reader runs before a run of many minutes. The
 * runs themselves are `npm run bench` and its siblings, never part of the suite.
 */

const GUIDE = 'docs/performance.md'
let t: TestContext
let runner: DocRunner

beforeAll(async () => {
  const port = await freePort()
  const gatehouse = `http://127.0.0.1:${port}`
  t = await buildTestApp({ PUBLIC_URL: gatehouse })
  await t.app.listen({ port, host: '127.0.0.1' })
  runner = await DocRunner.create(t, gatehouse)
})

afterAll(async () => {
  await runner?.close()
  await t?.close()
})

describe(GUIDE, { timeout: 120_000 }, () => {
  it.each(RUN[GUIDE]!)('"%s": the options print as shown', async (title) => {
    const blocks = blocksUnder(GUIDE, title)
    expect(blocks.length).toBeGreaterThan(0)
    for (const block of blocks) expect(await runner.runBlock(block)).toMatch(/^usage: npm run bench/m)
  })
})
