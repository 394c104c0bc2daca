import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestContext } from '../../helpers/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { expectAccessiblePage } from '../../helpers/console.js'
import { createAccessToken, createApplication, createUser } from '../../helpers/factories.js'
import { loggedInUser } from '../oauth/helpers.js'

/*
 * /admin: 404 for everyone but operators, confirmation before every action, CSRF on every
 * POST, and the actions themselves (their effects in depth: moderation tests).
 */

let t: TestContext
let operator: BrowserSession & { email: string }
let stranger: BrowserSession & { email: string }

beforeAll(async () => {
  t = await buildTestApp({ LOGIN_RATE_LIMIT: '10000' })
  operator = await loggedInUser(t.app, 'operator@example.com')
  await t.db.updateTable('users').set({ is_operator: true }).where('email', '=', 'operator@example.com').execute()
  stranger = await loggedInUser(t.app)
})
afterAll(async () => {
  await t.close()
})

const ADMIN_PAGES = [
  '/admin',
  '/admin/users',
  '/admin/applications',
  '/admin/applications?unregistered=1',
  '/admin/users?q=x&page=2',
  '/admin/audit',
  '/admin/audit?event=user.logged_in&from=2026-01-01&to=2099-12-31',
]

describe('who sees /admin', () => {
  it('answers 404 to a logged-out visitor and to a user who is not an operator, exactly as for no page at all', async () => {
    const app = await createApplication(t.db)
    const user = await createUser(t.db)
    const nowhere = await new BrowserSession(t.app).get('/no-such-page')
    for (const path of [...ADMIN_PAGES, `/admin/applications/${app.id}`, `/admin/users/${user.id}/suspend`]) {
      for (const s of [new BrowserSession(t.app), stranger]) {
        const res = await s.get(path)
        expect(res.statusCode, path).toBe(404)
        expect(res.body.replace(/name="_csrf" value="[^"]*"/g, '').replace(/<summary>[\s\S]*?<\/summary>/, '')).not.toContain('Operator')
      }
    }
    expect(nowhere.statusCode).toBe(404)
    // A POST by a non-operator, even with a valid CSRF token, changes nothing.
    await stranger.get('/applications')
    const post = await stranger.post(`/admin/applications/${app.id}/suspend`, {})
    expect(post.statusCode).toBe(404)
    const row = await t.db.selectFrom('applications').select('suspended_at').where('id', '=', app.id).executeTakeFirstOrThrow()
    expect(row.suspended_at).toBeNull()
  })

  it('shows operators an "Operator" menu entry and the pages', async () => {
    const home = await operator.get('/applications')
    expect(home.body).toContain('<a href="/admin">Operator</a>')
    expect((await stranger.get('/applications')).body).not.toContain('href="/admin"')
    for (const path of ADMIN_PAGES) {
      const res = await operator.get(path)
      expect(res.statusCode, path).toBe(200)
      expectAccessiblePage(res.body)
    }
  })
})

describe('actions', () => {
  it('asks for confirmation, needs the CSRF token, then suspends and unsuspends an application', async () => {
    const app = await createApplication(t.db, { name: 'Phishy <b>Bank</b>' })
    const list = await operator.get('/admin/applications?q=phishy')
    expect(list.body).toContain('Phishy &lt;b&gt;Bank&lt;/b&gt;')
    const confirm = await operator.get(`/admin/applications/${app.id}/suspend`)
    expect(confirm.statusCode).toBe(200)
    expect(confirm.body).toContain('Suspend Phishy &lt;b&gt;Bank&lt;/b&gt;?')
    expect(confirm.body).toMatch(new RegExp(`<form method="post" action="/admin/applications/${app.id}/suspend"`))

    const forged = await operator.post(`/admin/applications/${app.id}/suspend`, { _csrf: 'forged' })
    expect(forged.statusCode).toBe(403)
    expect(
      (await t.db.selectFrom('applications').select('suspended_at').where('id', '=', app.id).executeTakeFirstOrThrow()).suspended_at,
    ).toBeNull()

    await operator.get(`/admin/applications/${app.id}/suspend`)
    const done = await operator.post(`/admin/applications/${app.id}/suspend`, {})
    expect(done.statusCode).toBe(303)
    expect(done.headers.location).toBe(`/admin/applications/${app.id}?done=suspend`)
    const page = await operator.get(String(done.headers.location))
    expect(page.body).toContain('The application is suspended.')
    expect(
      (await t.db.selectFrom('applications').select('suspended_at').where('id', '=', app.id).executeTakeFirstOrThrow()).suspended_at,
    ).not.toBeNull()

    await operator.get(`/admin/applications/${app.id}/unsuspend`)
    expect((await operator.post(`/admin/applications/${app.id}/unsuspend`, {})).statusCode).toBe(303)
    expect(
      (await t.db.selectFrom('applications').select('suspended_at').where('id', '=', app.id).executeTakeFirstOrThrow()).suspended_at,
    ).toBeNull()
  })

  it('verifies, marks a resource server and deletes an application', async () => {
    const app = await createApplication(t.db)
    const flags = () => t.db.selectFrom('applications').selectAll().where('id', '=', app.id).executeTakeFirst()
    for (const action of ['verify', 'resource-server-on']) {
      await operator.get(`/admin/applications/${app.id}/${action}`)
      expect((await operator.post(`/admin/applications/${app.id}/${action}`, {})).statusCode).toBe(303)
    }
    expect(await flags()).toMatchObject({ is_resource_server: true, verified_at: expect.any(Date) })
    for (const action of ['unverify', 'resource-server-off']) {
      await operator.get(`/admin/applications/${app.id}/${action}`)
      expect((await operator.post(`/admin/applications/${app.id}/${action}`, {})).statusCode).toBe(303)
    }
    expect(await flags()).toMatchObject({ is_resource_server: false, verified_at: null })
    await operator.get(`/admin/applications/${app.id}/delete`)
    const deleted = await operator.post(`/admin/applications/${app.id}/delete`, {})
    expect(deleted.headers.location).toBe('/admin/applications?deleted=1')
    expect(await flags()).toBeUndefined()
  })

  it("shows each user's verification state on the list and on the user's page", async () => {
    // An unverified address proves nothing about who holds the account (docs/operating/admin.md "The first operator").
    const unverified = await createUser(t.db, { email: 'unproven-holder@example.com' })
    const verified = await createUser(t.db, { email: 'proven-holder@example.com', emailVerified: true })
    const list = await operator.get('/admin/users?q=-holder%40example.com')
    // From the link's `>`: one address ends the other, and the list's order between two users made in
    // the same millisecond is not fixed.
    const rowOf = (email: string) => new RegExp(`>${email}</a></td>\\s*<td[^>]*>[^<]*</td>\\s*<td>([^<]*)</td>`).exec(list.body)?.[1]
    expect(rowOf('unproven-holder@example.com')).toBe('Not verified')
    expect(rowOf('proven-holder@example.com')).toBe('Verified')
    expect((await operator.get(`/admin/users/${unverified.id}`)).body).toMatch(/<dt>Address<\/dt><dd>Not verified/)
    expect((await operator.get(`/admin/users/${verified.id}`)).body).toMatch(/<dt>Address<\/dt><dd>Verified on /)
  })

  it('suspends, unsuspends and deletes a user, but not the operator themself', async () => {
    const victim = await loggedInUser(t.app)
    const row = await t.db.selectFrom('users').select('id').where('email', '=', victim.email).executeTakeFirstOrThrow()
    const other = await createApplication(t.db)
    const token = await createAccessToken(t.db, { userId: row.id, applicationId: other.id })

    const found = await operator.get(`/admin/users?q=${encodeURIComponent(victim.email.toUpperCase())}`)
    expect(found.body).toContain(`/admin/users/${row.id}`)
    await operator.get(`/admin/users/${row.id}/suspend`)
    expect((await operator.post(`/admin/users/${row.id}/suspend`, {})).statusCode).toBe(303)
    // Their session ends at once.
    expect((await victim.get('/applications')).statusCode).toBe(303)
    expect(
      (await t.db.selectFrom('access_tokens').select('revoked_at').where('token_hash', '=', token.digest).executeTakeFirstOrThrow())
        .revoked_at,
    ).not.toBeNull()

    await operator.get(`/admin/users/${row.id}/unsuspend`)
    expect((await operator.post(`/admin/users/${row.id}/unsuspend`, {})).statusCode).toBe(303)
    await operator.get(`/admin/users/${row.id}/delete`)
    expect((await operator.post(`/admin/users/${row.id}/delete`, {})).headers.location).toBe('/admin/users?deleted=1')
    expect(await t.db.selectFrom('users').select('id').where('id', '=', row.id).executeTakeFirst()).toBeUndefined()

    const self = await t.db.selectFrom('users').select('id').where('email', '=', 'operator@example.com').executeTakeFirstOrThrow()
    expect((await operator.get(`/admin/users/${self.id}`)).body).toContain('This is your own account')
    expect((await operator.get(`/admin/users/${self.id}/suspend`)).statusCode).toBe(404)
    await operator.get('/admin/users')
    expect((await operator.post(`/admin/users/${self.id}/delete`, {})).statusCode).toBe(404)
  })

  it('answers 404 for unknown ids and actions, never a 500', async () => {
    for (const path of [
      '/admin/users/not-a-uuid',
      '/admin/users/00000000-0000-4000-8000-000000000000',
      '/admin/applications/x/suspend',
      '/admin/applications/00000000-0000-4000-8000-000000000000/explode',
    ]) {
      expect((await operator.get(path)).statusCode, path).toBe(404)
    }
  })
})

describe('the audit log', () => {
  it('records every operator action with the operator as actor and their address, and filters', async () => {
    const app = await createApplication(t.db, { name: 'Audited app' })
    const owner = await t.db.selectFrom('users').select('email').where('id', '=', app.ownerId).executeTakeFirstOrThrow()
    for (const action of ['suspend', 'unsuspend', 'verify', 'resource-server-on']) {
      await operator.get(`/admin/applications/${app.id}/${action}`)
      expect((await operator.post(`/admin/applications/${app.id}/${action}`, {})).statusCode).toBe(303)
    }
    const rows = await t.db
      .selectFrom('audit_events')
      .innerJoin('users', 'users.id', 'audit_events.actor_id')
      .select(['audit_events.event', 'audit_events.client_id', 'audit_events.client_address', 'audit_events.user_id', 'users.email'])
      .where('audit_events.client_id', '=', app.clientId)
      .orderBy('audit_events.id')
      .execute()
    expect(rows.map((r) => r.event)).toEqual([
      'operator.application_suspended',
      'operator.application_unsuspended',
      'operator.application_verified',
      'operator.resource_server_on',
    ])
    for (const r of rows) expect(r).toMatchObject({ email: 'operator@example.com', client_address: '127.0.0.1', user_id: app.ownerId })

    const byClient = await operator.get(`/admin/audit?client_id=${app.clientId}`)
    expect(byClient.statusCode).toBe(200)
    expect(byClient.body).toContain('<td>Application suspended by the operator</td>')
    expect(byClient.body).toContain('<td>Application made a resource server</td>')
    expect(byClient.body).not.toContain('<td>Logged in</td>')
    const byEvent = await operator.get(`/admin/audit?event=operator.application_verified&user=${encodeURIComponent(owner.email)}`)
    expect(byEvent.body).toContain('<td>Application verified by the operator</td>')
    expect(byEvent.body).not.toContain('<td>Application suspended by the operator</td>')
    expect((await operator.get('/admin/audit?user=nobody%40example.com')).body).toContain('No account has that email.')
    expect((await operator.get(`/admin/audit?client_id=${app.clientId}&to=2000-01-01`)).body).toContain('No events match.')
  })

  it('answers nonsense filters with the unfiltered page, never an error', async () => {
    for (const q of ['event=toString', 'from=2026-13-45', 'to=yesterday', 'before=1.2.3', 'user=%00', 'client_id=' + 'x'.repeat(500)]) {
      expect((await operator.get(`/admin/audit?${q}`)).statusCode, q).toBe(200)
    }
  })
})
