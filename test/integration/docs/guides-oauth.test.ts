import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { type CreatedApplication, createApplicationViaConsole } from '../../helpers/console.js'
import { type DocGatehouse, startDocGatehouse } from '../../helpers/doc-gatehouse.js'
import { type DocRunner, blocksUnder, section } from '../../helpers/doc-blocks.js'

/*
 * The command blocks of docs/oauth-endpoints.md, docs/openid-connect.md and
 * docs/resource-apis.md, run as printed (test/helpers/doc-blocks.ts says how), against one
 * Gatehouse. What the prose asks the reader to do in the console is done through the real pages.
 */

const OAUTH = 'docs/oauth-endpoints.md'
const OIDC = 'docs/openid-connect.md'
const RESOURCE = 'docs/resource-apis.md'

let t: TestContext
let runner: DocRunner
let gatehouse: string

let docs: DocGatehouse

beforeAll(async () => {
  docs = await startDocGatehouse()
  ;({ t, runner, gatehouse } = docs)
})

afterAll(() => docs?.close())

/** The authorize example of docs/oauth-endpoints.md, on one line, and the verifier its challenge was made from. */
function authorizeExample(): { url: string; verifier: string } {
  const text = section(OAUTH, '`GET /oauth/authorize`')
  const url = /^```text\n(\$AUTH\/oauth\/authorize\?[\s\S]*?)\n```$/m.exec(text)![1]!.replace(/\n\s+/g, '')
  const verifier = /`CODE_VERIFIER=([A-Za-z0-9._~-]{43,128})`/.exec(text)![1]!
  return { url: url.replace('$AUTH', gatehouse), verifier }
}

describe('docs/oauth-endpoints.md', { timeout: 120_000 }, () => {
  it('discovery answers as printed', async () => {
    const [discovery, ...more] = blocksUnder(OAUTH, 'Discovery: `GET /.well-known/oauth-authorization-server` (RFC 8414)')
    expect(more).toEqual([])
    runner.env.AUTH = gatehouse
    const metadata = JSON.parse(await runner.runBlock(discovery!))
    expect(metadata.issuer).toBe(gatehouse)
  })

  it('exchanges the code of the authorize example with each token example, then revokes as printed', async () => {
    const example = authorizeExample()
    const s = await new BrowserSession(t.app).signUpAndLogIn('pkce-reader@example.com')
    const registered = await createApplicationViaConsole(s, {
      name: 'PKCE example',
      redirect_uris: new URL(example.url).searchParams.get('redirect_uri')!,
      scopes: ['read', 'write_teams'],
    })
    const blocks = blocksUnder(OAUTH, '`POST /oauth/token`')
    expect(blocks).toHaveLength(3)
    let last = ''
    for (const block of blocks) {
      // RFC 6749 2.3.1: the client's secret in the body or the header, never in the URL.
      expect(block.text).not.toMatch(/[?&]client_secret=/)
      Object.assign(runner.env, {
        AUTH: gatehouse,
        CLIENT_ID: registered.clientId,
        CLIENT_SECRET: registered.clientSecret,
        CODE_VERIFIER: example.verifier,
      })
      runner.env.CODE = await runner.authorize(s, example.url.replace('$CLIENT_ID', registered.clientId))
      const output = JSON.parse(await runner.runBlock(block))
      expect(output, block.text).toMatchObject({ access_token: expect.stringMatching(/^gat_/), scope: 'read write_teams' })
      last = output.access_token
    }

    const [revoke, ...more] = blocksUnder(OAUTH, '`POST /oauth/revoke` (RFC 7009)')
    expect(more).toEqual([])
    runner.env.ACCESS_TOKEN = last
    await runner.runBlock(revoke!)
    const info = await t.app.inject({ url: '/oauth/token/info', headers: { authorization: `Bearer ${last}` } })
    expect(info.statusCode).toBe(401)
  })
})

describe('docs/openid-connect.md', { timeout: 120_000 }, () => {
  it('"Keys and rotation": rotates and lists the signing keys as printed', async () => {
    const [keys, ...more] = blocksUnder(OIDC, 'Keys and rotation')
    expect(more).toEqual([])
    await runner.runBlock(keys!)
    expect((await t.db.selectFrom('signing_keys').select('alg').execute()).map((k) => k.alg)).toEqual(['RS256'])
  })

  it('"Try it": the example relying party starts with the application the prose registers', async () => {
    const tryIt = section(OIDC, 'Try it: the example relying party')
    const [start, ...more] = blocksUnder(OIDC, 'Try it: the example relying party')
    expect(more).toEqual([])
    const uris = /redirect URI\s+`(http:\/\/localhost:4001\/callback)` and the post-logout redirect URI `(http:\/\/localhost:4001\/)`/.exec(
      tryIt,
    )!
    const s = await new BrowserSession(t.app).signUpAndLogIn('rp-reader@example.com')
    const rp = await createApplicationViaConsole(s, {
      name: 'Example RP',
      redirect_uris: runner.local(uris[1]!),
      post_logout_redirect_uris: runner.local(uris[2]!),
      scopes: ['openid', 'email', 'profile'],
    })
    Object.assign(runner.env, { RP_ID: rp.clientId, RP_SECRET: rp.clientSecret })
    await runner.runBlock(start!)
    // It answers where it said it listens: its home page offers the sign-in.
    const home = await fetch(`http://localhost:${runner.rpPort}/`)
    expect(await home.text()).toContain('Sign in with Gatehouse')
  })
})

describe('docs/resource-apis.md', { timeout: 180_000 }, () => {
  let planned: CreatedApplication
  let api: CreatedApplication
  let s: BrowserSession

  beforeAll(async () => {
    s = await new BrowserSession(t.app).signUpAndLogIn('you@example.com')
  })

  it('"Try it": every step as printed, then step 3 again with the scopes Team Planner registered', async () => {
    const tryIt = section(RESOURCE, 'Try it: the example resource API')
    const blocks = blocksUnder(RESOURCE, 'Try it: the example resource API')
    expect(blocks).toHaveLength(4)
    const [resourceServerStep, exampleStep, tokenStep, watchStep] = blocks

    // Step 1 (the console, in prose): register both applications as told.
    const planner = /"Team Planner" \(redirect URI\s+`([^`]+)`, scopes `(\w+)` and `(\w+)`\)/.exec(tryIt)!
    planned = await createApplicationViaConsole(s, { name: 'Team Planner', redirect_uris: planner[1]!, scopes: [planner[2]!, planner[3]!] })
    const apiUri = /enter `([^`]+)` \(nothing listens there\) and check only the scope `(\w+)`/.exec(tryIt)!
    api = await createApplicationViaConsole(s, { name: 'Example API', redirect_uris: apiUri[1]!, scopes: [apiUri[2]!] })
    Object.assign(runner.env, {
      APP_ID: planned.clientId,
      APP_SECRET: planned.clientSecret,
      RS_ID: api.clientId,
      RS_SECRET: api.clientSecret,
    })

    await runner.runBlock(resourceServerStep!)
    const row = await t.db
      .selectFrom('applications')
      .select('is_resource_server')
      .where('client_id', '=', api.clientId)
      .executeTakeFirstOrThrow()
    expect(row.is_resource_server).toBe(true)

    await runner.runBlock(exampleStep!)

    const authorizeUrl = runner
      .local(/open\s+`(http:\/\/127\.0\.0\.1:3000\/oauth\/authorize\?[^`]+)`/.exec(tryIt)![1]!)
      .replace('$APP_ID', runner.env.APP_ID!)
    runner.env.CODE = await runner.authorize(s, authorizeUrl)
    await runner.runBlock(tokenStep!)
    expect(runner.env.TOKEN).toMatch(/^gat_/)

    await runner.runBlock(watchStep!)

    // "Repeat step 3 with scope=…": the scope the guide names, then POST /teams answers 201.
    const scope = /Repeat step 3 with `scope=([^`]+)`/.exec(tryIt)![1]!
    runner.env.CODE = await runner.authorize(s, authorizeUrl.replace('scope=read', `scope=${scope}`))
    // The same commands; the printed answer is step 3's, with `read` alone.
    const exchanged = await runner.runBlock({ text: tokenStep!.text.replace(/^# .*\n/gm, '') })
    expect(JSON.parse(exchanged).scope).toBe('read write_teams')
    const postTeams = watchStep!.text.split('\n').find((l) => l.includes('-X POST'))!
    expect(await runner.bash(runner.local(postTeams))).toMatch(/^HTTP\/[\d.]+ 201 /)
  })

  it('introspection and token info answer as printed, for a live token', async () => {
    const [introspect, ...more] = blocksUnder(RESOURCE, '`POST /oauth/introspect` (RFC 7662)')
    const [info, ...more2] = blocksUnder(RESOURCE, '`GET /oauth/token/info`')
    expect([...more, ...more2]).toEqual([])
    // The token of the repeated step 3 above, still live; the examples' AUTH is Gatehouse.
    runner.env.AUTH = gatehouse
    const introspected = JSON.parse(await runner.runBlock(introspect!))
    expect(introspected).toMatchObject({ active: true, client_id: planned.clientId, username: 'you@example.com' })
    const described = JSON.parse(await runner.runBlock(info!))
    expect(described).toMatchObject({ application: { uid: planned.clientId }, expires_in: null })
  })
})
