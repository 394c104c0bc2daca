import { runCli } from '../../src/cli/run.js'
import type { Config } from '../../src/config.js'
import type { Mailer } from '../../src/mail/mailer.js'
import { createServices } from '../../src/services.js'
import type { TestContext } from './app.js'

export interface CliResult {
  code: number
  out: string
  err: string
}

/**
 * Runs `gatehouse …argv` in this process with the services as src/cli.ts builds them, on the
 * test's database and clock (which stay open after the command), under the test's config unless
 * `options.config` says otherwise, and with the configured mailer unless `options.mailer` (the
 * test's mailbox, say) replaces it; what it printed on stdout and stderr.
 */
export async function runCliOn(
  t: Pick<TestContext, 'config' | 'testDb' | 'clock'>,
  argv: readonly string[],
  options: { config?: Config; mailer?: Mailer } = {},
): Promise<CliResult> {
  const { config = t.config, mailer } = options
  const out: string[] = []
  const err: string[] = []
  const code = await runCli(
    [...argv],
    {
      open: () => createServices(config, { role: 'cli', database: t.testDb.handle, clock: t.clock, mailer }),
      mail: config.mail,
    },
    { out: (s) => out.push(s), err: (s) => err.push(s) },
  )
  return { code, out: out.join('\n'), err: err.join('\n') }
}
