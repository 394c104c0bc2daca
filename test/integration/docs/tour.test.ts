import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { createApplicationViaConsole } from '../../helpers/console.js'
import { type DocGatehouse, startDocGatehouse } from '../../helpers/doc-gatehouse.js'
import { type DocRunner, blocksUnder, section } from '../../helpers/doc-blocks.js'

/*
 * README "A ten-minute tour", top to bottom as printed (test/helpers/doc-blocks.ts says how a
 * block runs). The steps the README gives in prose, in the browser, are walked through the real
 * pages with the values the prose names; mail goes to an outbox directory, as with `npm start`.
 */

const TOUR = 'A ten-minute tour'
let t: TestContext
let runner: DocRunner

let docs: DocGatehouse

beforeAll(async () => {
  docs = await startDocGatehouse({ outbox: true })
  ;({ t, runner } = docs)
})

afterAll(() => docs?.close())

describe('README "A ten-minute tour"', { timeout: 180_000 }, () => {
  it('goes from sign-up to a revoked token refused by a protected API, as printed', async () => {
    const tour = section('README.md', TOUR)
    const blocks = blocksUnder('README.md', TOUR)
    expect(blocks).toHaveLength(7)
    const [outboxStep, appCredentials, pkce, exchange, apiCredentials, api, revoke] = blocks

    // 1. Sign up and log in (prose), read the mail, open its link in that browser.
    const email = /create an account as `([^`]+)`/.exec(tour)![1]!
    const s = await new BrowserSession(t.app).signUpAndLogIn(email, 'a password of my choice', { verify: false })
    const mail = await runner.runBlock(outboxStep!)
    const link = /http:\/\/\S+\/verify-email\?token=gev_\S+/.exec(mail)![0]
    await s.verifyEmail(link.replace(runner.gatehouse, ''))
    expect(
      (await t.db.selectFrom('users').select('email_verified_at').where('email', '=', email).executeTakeFirstOrThrow()).email_verified_at,
    ).not.toBeNull()

    // 2. Register the application as the prose says; its credentials are what the reader keeps.
    const planner = /"Team Planner" \(redirect\s+URI\s+`([^`]+)`, scopes\s+`(\w+)` and `(\w+)`\)/.exec(tour)!
    const planned = await createApplicationViaConsole(s, {
      name: 'Team Planner',
      redirect_uris: planner[1]!,
      scopes: [planner[2]!, planner[3]!],
    })
    Object.assign(runner.env, { APP_ID: planned.clientId, APP_SECRET: planned.clientSecret })
    await runner.runBlock(appCredentials!)

    // 3. The printed authorize address, Authorize, the code from the address bar, the exchange.
    const authorizeUrl = (await runner.runBlock(pkce!)).trim()
    expect(new URL(authorizeUrl).searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/)
    runner.env.CODE = await runner.authorize(s, authorizeUrl)
    // The secret travels in the Authorization header, never in the URL.
    expect(exchange!.text).not.toMatch(/[?&]client_secret=/)
    const token = JSON.parse(await runner.runBlock(exchange!))
    expect(token).toMatchObject({ access_token: runner.env.TOKEN, scope: `${planner[2]} ${planner[3]}` })
    expect(runner.env.TOKEN).toMatch(/^gat_/)

    // 4. The API's application, marked by the command, the example started, its answers.
    const apiApp = /"Example API" \(redirect\s+URI\s+`([^`]+)`, scope `(\w+)` only/.exec(tour)!
    const registered = await createApplicationViaConsole(s, { name: 'Example API', redirect_uris: apiApp[1]!, scopes: [apiApp[2]!] })
    Object.assign(runner.env, { RS_ID: registered.clientId, RS_SECRET: registered.clientSecret })
    await runner.runBlock(apiCredentials!)
    const marked = await t.db
      .selectFrom('applications')
      .select('is_resource_server')
      .where('client_id', '=', registered.clientId)
      .executeTakeFirstOrThrow()
    expect(marked.is_resource_server).toBe(true)
    await runner.runBlock(api!)

    // 5. Revoked, and refused by the API once the notice reached its cache.
    await runner.runBlock(revoke!)
  })
})
