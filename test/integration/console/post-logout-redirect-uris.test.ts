import { expect, it } from 'vitest'
import { applicationForm, consoleTestFile, createApplicationViaConsole } from '../../helpers/console.js'
import { loggedInUser } from '../oauth/helpers.js'

/*
 * "Post-logout redirect URIs" (OpenID Connect RP-Initiated Logout 1.0 3): optional, checked line
 * by line by the same rules as redirect URIs (docs/decisions/001-redirect-uri-matching.md),
 * bounded like them, shown on the application's page and on the operator's.
 */

const { t, developer: s } = consoleTestFile('logout-uris@example.com')

const stored = async (id: string) =>
  (await t.db.selectFrom('applications').select('post_logout_redirect_uris').where('id', '=', id).executeTakeFirstOrThrow())
    .post_logout_redirect_uris

it('are optional: an application registered without any has none', async () => {
  const created = await createApplicationViaConsole(s)
  expect(await stored(created.id)).toEqual([])
  expect((await s.get(`/applications/${created.id}`)).body).toMatch(/<dt>Post-logout redirect URIs<\/dt>\s*<dd>None<\/dd>/)
})

it.each([
  ['javascript:alert(1)', 'must not use the javascript: scheme'],
  ['http://example.com/bye', 'must use https (http is allowed only for localhost, 127.0.0.1 and [::1])'],
  ['https://*.example.com/bye', 'must not contain wildcards'],
  ['https://example.com/bye#x', 'must not contain a fragment'],
  ['https://user:pw@example.com/bye', 'must not contain user information'],
  ['https://example.com/a/../bye', 'must not contain dot segments'],
])('refuses %s, naming the line, and keeps what was typed', async (uri, reason) => {
  const before = await t.db.selectFrom('applications').select('id').execute()
  await s.get('/applications/new')
  const res = await s.post('/applications', applicationForm({ post_logout_redirect_uris: `https://fine.example.com/bye\n${uri}` }))
  expect(res.statusCode).toBe(400)
  const errorBlock = /id="post_logout_redirect_uris-error">([\s\S]*?)<\/p>/.exec(res.body)?.[1] ?? ''
  expect(errorBlock).toContain('Line 2 (')
  expect(errorBlock).toContain(reason)
  expect(res.body).toContain('aria-describedby="post_logout_redirect_uris-error"')
  expect(await t.db.selectFrom('applications').select('id').execute()).toHaveLength(before.length)
})

it('accepts at most 20', async () => {
  await s.get('/applications/new')
  const many = Array.from({ length: 21 }, (_, i) => `https://a.example.com/bye${i}`).join('\n')
  const res = await s.post('/applications', applicationForm({ post_logout_redirect_uris: many }))
  expect(res.statusCode).toBe(400)
  expect(res.body).toContain('Enter at most 20 post-logout redirect URIs.')
})

it('are stored as typed (blank lines and repeats dropped), shown, and changed by an edit', async () => {
  const uris = ['https://planner.example.com/signed-out', 'http://127.0.0.1:8080/bye', 'com.example.app:/bye']
  const created = await createApplicationViaConsole(s, {
    post_logout_redirect_uris: `${uris[0]}\r\n\r\n  ${uris[1]}  \n${uris[2]}\n${uris[0]}`,
  })
  expect(await stored(created.id)).toEqual(uris)
  const page = (await s.get(`/applications/${created.id}`)).body
  for (const uri of uris) expect(page).toContain(`<li><code>${uri}</code></li>`)
  const edit = await s.get(`/applications/${created.id}/edit`)
  expect(edit.body).toContain(`${uris.join('\n')}</textarea>`)

  const res = await s.post(`/applications/${created.id}`, applicationForm({ post_logout_redirect_uris: 'https://after.example.com/bye' }))
  expect(res.statusCode).toBe(303)
  expect(await stored(created.id)).toEqual(['https://after.example.com/bye'])
  const event = await t.db
    .selectFrom('audit_events')
    .select('detail')
    .where('event', '=', 'application.updated')
    .where('client_id', '=', created.clientId)
    .executeTakeFirstOrThrow()
  expect(event.detail).toBe('Changed: post-logout redirect URIs')
})

it('are shown to an operator on the application admin page', async () => {
  const created = await createApplicationViaConsole(s, { post_logout_redirect_uris: 'https://planner.example.com/operator-sees' })
  const operator = await loggedInUser(t.app, 'logout-uris-operator@example.com')
  await t.db.updateTable('users').set({ is_operator: true }).where('email', '=', 'logout-uris-operator@example.com').execute()
  const page = await operator.get(`/admin/applications/${created.id}`)
  expect(page.statusCode).toBe(200)
  expect(page.body).toContain('Post-logout redirect URIs')
  expect(page.body).toContain('<code>https://planner.example.com/operator-sees</code>')
})
