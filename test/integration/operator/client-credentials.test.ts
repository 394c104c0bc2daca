import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { applicationForm, createApplicationViaConsole, storedApplication } from '../../helpers/console.js'
import { basicAuth, createApplication } from '../../helpers/factories.js'
import { type CliResult, runCliOn } from '../../helpers/cli.js'

/*
 * Only an operator enables the client credentials grant of a machine application and chooses
 * its scopes (docs/operating/command-line.md, docs/decisions/021-machine-tokens.md): on the
 * command line, recorded in the audit log, refused for any other kind of application and for
 * scopes that describe a user; turned off or narrowed, the machine's tokens are revoked. The
 * console has no such form: a developer who posts the field to their application's settings
 * changes nothing.
 */

let t: TestContext

beforeAll(async () => {
  t = await buildTestApp()
})
afterAll(async () => {
  await t?.close()
})

function cli(...argv: string[]): Promise<CliResult> {
  return runCliOn(t, argv)
}

const grantOf = async (id: string) => (await storedApplication(t.db, id))?.client_credentials_scopes

function tokenRequest(app: { clientId: string; clientSecret: string }) {
  return t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { authorization: basicAuth(app.clientId, app.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=client_credentials',
  })
}

async function eventsOf(clientId: string): Promise<{ event: string; detail: string }[]> {
  return t.db
    .selectFrom('audit_events')
    .select(['event', 'detail'])
    .where('client_id', '=', clientId)
    .orderBy('occurred_at')
    .orderBy('id')
    .execute()
}

describe('gatehouse apps client-credentials', () => {
  it('enables, changes and turns off the grant, each recorded, the narrowing ones revoking the machine tokens', async () => {
    const app = await createApplication(t.db, { name: 'Nightly sync', kind: 'machine' })
    expect((await tokenRequest(app)).json()).toMatchObject({ error: 'unauthorized_client' })

    const on = await cli('apps', 'client-credentials', app.clientId, '--scopes', 'read write_teams', '--json')
    expect(on.code, on.err).toBe(0)
    expect(JSON.parse(on.out)).toEqual({
      ok: true,
      client_id: app.clientId,
      client_credentials_scopes: ['read', 'write_teams'],
      changed: true,
      revoked: 0,
    })
    expect(await grantOf(app.id)).toEqual(['read', 'write_teams'])
    const first = (await tokenRequest(app)).json<{ access_token: string; scope: string }>()
    expect(first.scope).toBe('read write_teams')

    const again = await cli('apps', 'client-credentials', app.clientId, '--scopes', 'write_teams read')
    expect(again.out).toContain('already had the client credentials grant for: read write_teams')

    const narrowed = await cli('apps', 'client-credentials', app.clientId, '--scopes', 'read')
    expect(narrowed.out).toBe(
      'Nightly sync (' + app.clientId + ') may use the client credentials grant for: read. 1 of its machine tokens revoked.',
    )
    const afterNarrowing = await t.db.selectFrom('access_tokens').select('revoked_at').where('application_id', '=', app.id).execute()
    expect(afterNarrowing.every((r) => r.revoked_at !== null)).toBe(true)
    expect((await tokenRequest(app)).json()).toMatchObject({ scope: 'read' })

    const off = await cli('apps', 'client-credentials', app.clientId, 'off')
    expect(off.code, off.err).toBe(0)
    expect(off.out).toContain('may no longer use the client credentials grant. 1 of its machine tokens revoked.')
    expect(await grantOf(app.id)).toBeNull()
    expect((await tokenRequest(app)).json()).toMatchObject({ error: 'unauthorized_client' })

    expect(await eventsOf(app.clientId)).toEqual([
      { event: 'operator.client_credentials_on', detail: 'Scopes: read write_teams; 0 machine tokens revoked; from the command line' },
      { event: 'operator.client_credentials_changed', detail: 'Scopes: read; 1 machine token revoked; from the command line' },
      { event: 'operator.client_credentials_off', detail: '1 machine token revoked; from the command line' },
    ])
  })

  it('refuses, in one line and changing nothing: another kind, a user scope, an unknown scope, neither or both forms', async () => {
    const web = await createApplication(t.db, { name: 'Web app' })
    const machine = await createApplication(t.db, { kind: 'machine' })
    const cases: [string[], RegExp][] = [
      [['apps', 'client-credentials', web.clientId, '--scopes', 'read'], /is not a machine application/],
      [['apps', 'client-credentials', machine.clientId, '--scopes', 'openid read'], /describes a user/],
      [['apps', 'client-credentials', machine.clientId, '--scopes', 'frobnicate'], /Unknown scope: frobnicate/],
      [['apps', 'client-credentials', machine.clientId, '--scopes', ' '], /at least one scope/],
      [['apps', 'client-credentials', machine.clientId], /--scopes "SCOPES" or off/],
      [['apps', 'client-credentials', machine.clientId, 'off', '--scopes', 'read'], /--scopes "SCOPES" or off/],
      [['apps', 'client-credentials', machine.clientId, 'on'], /--scopes "SCOPES" or off/],
      [['apps', 'client-credentials', 'no-such-client', '--scopes', 'read'], /No application has the client_id/],
    ]
    for (const [argv, message] of cases) {
      const { code, err } = await cli(...argv)
      expect(code, argv.join(' ')).toBe(1)
      expect(err.split('\n'), err).toHaveLength(1)
      expect(err, argv.join(' ')).toMatch(message)
    }
    expect(await grantOf(web.id)).toBeNull()
    expect(await grantOf(machine.id)).toBeNull()
    expect(await eventsOf(web.clientId)).toEqual([])
  })

  it('apps show says the kind and the grant', async () => {
    const app = await createApplication(t.db, { kind: 'machine', clientCredentialsScopes: ['read'] })
    const shown = JSON.parse((await cli('apps', 'show', app.clientId, '--json')).out)
    expect(shown).toMatchObject({ kind: 'machine', client_credentials: ['read'] })
  })
})

describe('the console', () => {
  it('has no way for a developer to grant their own application client credentials', async () => {
    const developer = await new BrowserSession(t.app).signUpAndLogIn('dev-machine@example.com')
    const created = await createApplicationViaConsole(developer, { name: 'My daemon' })
    const edit = await developer.get(`/applications/${created.id}/edit`)
    expect(edit.body).not.toMatch(/client_credentials|client credentials/i)
    const posted = await developer.post(`/applications/${created.id}`, {
      ...applicationForm({ name: 'My daemon' }),
      client_credentials_scopes: 'read write',
      kind: 'machine',
    })
    expect(posted.statusCode).toBeLessThan(500)
    expect(await grantOf(created.id)).toBeNull()
    expect((await tokenRequest(created)).json()).toMatchObject({ error: 'unauthorized_client' })
  })
})
