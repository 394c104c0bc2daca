import { describe, expect, it } from 'vitest'
import { REVOCATION_CHANNEL } from '@gatehouse/verifier/shared'
import { authorizeUrl, createClient, exchange, expectOAuthError, loggedInUser, obtainCode, tokenRow } from './helpers.js'
import { oauthTestFile } from '../../helpers/oauth-set-up.js'

const { t } = oauthTestFile()

const grantId = (html: string) => /action="\/authorized-applications\/([0-9a-f-]{36})\/revoke"/.exec(html)?.[1]

describe('Authorized Applications', () => {
  it('needs a logged-in user', async () => {
    const res = await t.app.inject('/authorized-applications')
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe(`/login?next=${encodeURIComponent('/authorized-applications')}`)
  })

  it('lists the applications this user granted, with scopes and date', async () => {
    const s = await loggedInUser(t.app)
    const empty = await s.get('/authorized-applications')
    expect(empty.statusCode).toBe(200)
    expect(empty.body).toMatch(/not authorized any application/)
    const app = await createClient(t.db, { name: 'Fixture Sync' })
    await obtainCode(s, app, { scope: 'read write_events' })
    const page = await s.get('/authorized-applications')
    expect(page.body).toContain('Fixture Sync')
    expect(page.body).toContain('Change the team schedule (games and events)')
    expect(page.body).toContain(t.clock().toISOString().slice(0, 10))
    expect(page.body).toMatch(/Revoke access/)
  })

  it('"Revoke access" revokes every token of this user and application, pending codes and the consent', async () => {
    const s = await loggedInUser(t.app)
    const bystander = await loggedInUser(t.app)
    const app = await createClient(t.db)
    const t1 = (await exchange(t.app, app, { code: await obtainCode(s, app) })).json().access_token
    const t2 = (await exchange(t.app, app, { code: await obtainCode(s, app) })).json().access_token
    const pending = await obtainCode(s, app)
    const other = (await exchange(t.app, app, { code: await obtainCode(bystander, app) })).json().access_token

    const notices: string[] = []
    const stop = await t.testDb.handle.listen(REVOCATION_CHANNEL, (p) => notices.push(p))
    try {
      const page = await s.get('/authorized-applications')
      const id = grantId(page.body)!
      const res = await s.post(`/authorized-applications/${id}/revoke`, {})
      expect(res.statusCode).toBe(303)
      expect(res.headers.location).toBe('/authorized-applications?revoked=1')
      expect((await s.get('/authorized-applications?revoked=1')).body).toMatch(/Access revoked/)
      const user = await t.db.selectFrom('users').select('id').where('email', '=', s.email).executeTakeFirstOrThrow()
      await expect.poll(() => notices).toContain(`user-app:${user.id}:${app.id}`)
    } finally {
      await stop()
    }
    expect((await tokenRow(t.db, t1))?.revoked_at).not.toBeNull()
    expect((await tokenRow(t.db, t2))?.revoked_at).not.toBeNull()
    expect((await tokenRow(t.db, other))?.revoked_at).toBeNull()
    expectOAuthError(await exchange(t.app, app, { code: pending }), 'invalid_grant')
    const again = await s.get(authorizeUrl({ response_type: 'code', client_id: app.clientId }))
    expect(again.statusCode).toBe(200)
    expect(again.body).toMatch(/Authorize/)
  })

  it("cannot touch another user's grant and requires the CSRF token", async () => {
    const owner = await loggedInUser(t.app)
    const intruder = await loggedInUser(t.app)
    const app = await createClient(t.db)
    const token = (await exchange(t.app, app, { code: await obtainCode(owner, app) })).json().access_token
    const id = grantId((await owner.get('/authorized-applications')).body)!
    await intruder.get('/authorized-applications')
    expect((await intruder.post(`/authorized-applications/${id}/revoke`, {})).statusCode).toBe(303)
    expect((await owner.post(`/authorized-applications/${id}/revoke`, { _csrf: null })).statusCode).toBe(403)
    expect((await intruder.post('/authorized-applications/not-a-uuid/revoke', {})).statusCode).toBe(303)
    expect((await tokenRow(t.db, token))?.revoked_at).toBeNull()
    expect(grantId((await owner.get('/authorized-applications')).body)).toBe(id)
  })
})
