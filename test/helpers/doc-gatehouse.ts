import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type TestContext, buildTestApp } from './app.js'
import { DocRunner } from './doc-blocks.js'
import { freePort } from './gatehouse-process.js'

/** A Gatehouse for a document's command blocks, as a reader's `npm start` serves it. */
export interface DocGatehouse {
  t: TestContext
  runner: DocRunner
  /** Its address, the reader's http://127.0.0.1:3000. */
  gatehouse: string
  /** With `outbox`, the directory its mail goes to, as without SMTP_URL (docs/accounts.md "Mail"). */
  outbox: string | undefined
  close(): Promise<void>
}

/**
 * Listens on a free port, with the runner of test/helpers/doc-blocks.ts pointed at it; `env`
 * holds the settings a guide starts Gatehouse with.
 */
export async function startDocGatehouse(options: { outbox?: boolean; env?: Record<string, string> } = {}): Promise<DocGatehouse> {
  const port = await freePort()
  const gatehouse = `http://127.0.0.1:${port}`
  const outbox = options.outbox ? await mkdtemp(join(tmpdir(), 'gatehouse-docs-outbox-')) : undefined
  const t = outbox
    ? await buildTestApp({ ...options.env, PUBLIC_URL: gatehouse, MAIL_OUTBOX_DIR: outbox }, undefined, { realMailer: true })
    : await buildTestApp({ ...options.env, PUBLIC_URL: gatehouse })
  await t.app.listen({ port, host: '127.0.0.1' })
  const runner = await DocRunner.create(t, gatehouse)
  return {
    t,
    runner,
    gatehouse,
    outbox,
    async close() {
      await runner.close()
      await t.close()
      if (outbox) await rm(outbox, { recursive: true, force: true })
    },
  }
}
