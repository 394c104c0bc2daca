import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { type DocGatehouse, startDocGatehouse } from '../../helpers/doc-gatehouse.js'
import { type DocRunner, blocksUnder } from '../../helpers/doc-blocks.js'

/*
 * The command blocks of docs/accounts.md and docs/operating/admin.md, run as printed
 * (test/helpers/doc-blocks.ts says how). Mail goes to an outbox directory, as with `npm start`,
 * so `gatehouse outbox` reads what the sign-up wrote.
 */

let t: TestContext
let runner: DocRunner

let docs: DocGatehouse

beforeAll(async () => {
  docs = await startDocGatehouse({ outbox: true })
  ;({ t, runner } = docs)
})

afterAll(() => docs?.close())

async function user(email: string) {
  return t.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirstOrThrow()
}

describe('docs/accounts.md and docs/operating/admin.md', { timeout: 120_000 }, () => {
  it('"Mail", then "The first operator": the verification link from the outbox, then admin add', async () => {
    const s = await new BrowserSession(t.app).signUpAndLogIn('you@example.com', 'correct horse battery', { verify: false })
    const [mail, ...more] = blocksUnder('docs/accounts.md', 'Mail')
    expect(more).toEqual([])
    const printed = await runner.runBlock(mail!)
    const link = /http:\/\/\S+\/verify-email\?token=gev_\S+/.exec(printed)![0]
    await s.verifyEmail(link.replace(runner.gatehouse, ''))
    expect((await user('you@example.com')).email_verified_at).not.toBeNull()

    const [admin, ...others] = blocksUnder('docs/operating/admin.md', 'The first operator')
    expect(others).toEqual([])
    await runner.runBlock(admin!)
    expect((await user('you@example.com')).is_operator).toBe(true)
  })

  it('"Lost second factor: the operator\'s reset": the command as printed', async () => {
    await new BrowserSession(t.app).signUpAndLogIn('user@example.com', 'correct horse battery', { verify: false })
    const [reset, ...more] = blocksUnder('docs/accounts.md', "Lost second factor: the operator's reset")
    expect(more).toEqual([])
    await runner.runBlock(reset!)
    const events = await t.db.selectFrom('audit_events').select('event').where('event', '=', 'operator.second_factor_reset').execute()
    expect(events).toHaveLength(1)
  })
})
