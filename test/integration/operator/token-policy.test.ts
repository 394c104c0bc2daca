import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import type { BrowserSession } from '../../helpers/browser-session.js'
import { expectAccessiblePage } from '../../helpers/console.js'
import { createApplication } from '../../helpers/factories.js'
import { loggedInUser } from '../oauth/helpers.js'
import { type CliResult, runCliOn } from '../../helpers/cli.js'

/*
 * The operator sees an application's token policy (docs/operating/admin.md "Token policy"): on
 * its admin page, briefly in the admin list, and from `gatehouse apps show` and `apps list`.
 */

let t: TestContext
let operator: BrowserSession & { email: string }

beforeAll(async () => {
  t = await buildTestApp()
  operator = await loggedInUser(t.app, 'policy-operator@example.com')
  await t.db.updateTable('users').set({ is_operator: true }).where('email', '=', operator.email).execute()
})
afterAll(async () => {
  await t.close()
})

function cli(...argv: string[]): Promise<CliResult> {
  return runCliOn(t, argv)
}

async function withPolicy(name: string, kind: 'web' | 'machine', policy: { dpop: boolean; access: number | null; refresh: number | null }) {
  const app = await createApplication(t.db, { name, kind })
  await t.db
    .updateTable('applications')
    .set({ require_dpop: policy.dpop, access_token_ttl_seconds: policy.access, refresh_token_ttl_seconds: policy.refresh })
    .where('id', '=', app.id)
    .execute()
  return app
}

describe("an application's token policy for the operator", () => {
  it('the admin page and list show DPoP and the lifetimes, "until revoked" by default', async () => {
    const plain = await createApplication(t.db, { name: 'Plain Policy' })
    const strict = await withPolicy('Strict Policy', 'web', { dpop: true, access: 3600, refresh: 90 * 86_400 })
    const robot = await withPolicy('Robot Policy', 'machine', { dpop: false, access: 8 * 3600, refresh: 30 * 86_400 })

    const plainPage = await operator.get(`/admin/applications/${plain.id}`)
    expect(plainPage.statusCode).toBe(200)
    expectAccessiblePage(plainPage.body)
    expect(plainPage.body).toMatch(/<dd id="token-policy-dpop">Optional: a client that sends a DPoP proof gets a bound token/)
    expect(plainPage.body).toContain('<dd id="token-policy-access">Valid until revoked</dd>')
    expect(plainPage.body).toContain('<dd id="token-policy-refresh">None: access tokens do not expire</dd>')

    const strictPage = await operator.get(`/admin/applications/${strict.id}`)
    expect(strictPage.body).toMatch(/<dd id="token-policy-dpop">Required: a token request without a valid DPoP proof is refused/)
    expect(strictPage.body).toContain('<dd id="token-policy-access">Expire after 1 hour</dd>')
    expect(strictPage.body).toContain('<dd id="token-policy-refresh">Rotate at each use; unused, one expires after 90 days</dd>')

    const robotPage = await operator.get(`/admin/applications/${robot.id}`)
    expect(robotPage.body).toContain('<dd id="token-policy-access">Expire after 8 hours</dd>')
    expect(robotPage.body).toMatch(/<dd id="token-policy-refresh">None: a machine asks for a new token with its secret/)

    const list = await operator.get('/admin/applications?q=Policy')
    expect(list.statusCode).toBe(200)
    expect(list.body).toContain('<td>DPoP optional, tokens valid until revoked</td>')
    expect(list.body).toContain('<td>DPoP required, access tokens 1 hour, refresh tokens 90 days</td>')
    expect(list.body).toContain('<td>DPoP optional, access tokens 8 hours</td>')
    expect(list.body).toContain('<td>Machine</td>')
  })

  it('apps show prints the policy (seconds with --json) and apps list its brief', async () => {
    const plain = await createApplication(t.db, { name: 'Shown Plain' })
    const strict = await withPolicy('Shown Strict', 'web', { dpop: true, access: 8 * 3600, refresh: 180 * 86_400 })
    const robot = await withPolicy('Shown Robot', 'machine', { dpop: true, access: 86_400, refresh: 30 * 86_400 })

    const text = await cli('apps', 'show', strict.clientId)
    expect(text.code).toBe(0)
    expect(text.out).toMatch(/^dpop: +required$/m)
    expect(text.out).toMatch(/^access_token_lifetime: +8 hours$/m)
    expect(text.out).toMatch(/^refresh_token_lifetime: +180 days$/m)
    expect(JSON.parse((await cli('apps', 'show', strict.clientId, '--json')).out)).toMatchObject({
      dpop: 'required',
      require_dpop: true,
      access_token_ttl_seconds: 8 * 3600,
      refresh_token_ttl_seconds: 180 * 86_400,
    })

    expect(JSON.parse((await cli('apps', 'show', plain.clientId, '--json')).out)).toMatchObject({
      dpop: 'optional',
      access_token_lifetime: 'until revoked',
      refresh_token_lifetime: null,
      access_token_ttl_seconds: null,
      refresh_token_ttl_seconds: null,
    })
    // A machine's refresh lifetime is stored (the check keeps the pair) but never applies (RFC 6749 §4.4.3).
    expect(JSON.parse((await cli('apps', 'show', robot.clientId, '--json')).out)).toMatchObject({
      kind: 'machine',
      access_token_lifetime: '1 day',
      refresh_token_lifetime: null,
    })

    const rows = JSON.parse((await cli('apps', 'list', '--search', 'Shown', '--json')).out) as Array<Record<string, unknown>>
    const byName = Object.fromEntries(rows.map((r) => [r.name, r]))
    expect(byName['Shown Plain']).toMatchObject({ kind: 'web', tokens: 'DPoP optional, tokens valid until revoked' })
    expect(byName['Shown Strict']).toMatchObject({ tokens: 'DPoP required, access tokens 8 hours, refresh tokens 180 days' })
    expect(byName['Shown Robot']).toMatchObject({ kind: 'machine', tokens: 'DPoP required, access tokens 1 day' })
    expect((await cli('apps', 'list', '--search', 'Shown')).out).toContain('DPoP required, access tokens 8 hours, refresh tokens 180 days')
  })
})
