import { afterAll, beforeAll, expect, it } from 'vitest'
import { buildTestApp, type TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { applicationForm, createApplicationViaConsole } from '../../helpers/console.js'

/*
 * Registration accepts https, http only for loopback and localhost, and private-use schemes with
 * a dot; never javascript:, data:, wildcards, userinfo or fragments (docs/decisions/
 * 001-redirect-uri-matching.md). Each refusal names the line and the reason beside the field.
 */

let t: TestContext
let s: BrowserSession
beforeAll(async () => {
  t = await buildTestApp()
  s = await new BrowserSession(t.app).signUpAndLogIn('uris@example.com')
})
afterAll(async () => {
  await t.close()
})

it.each([
  ['javascript:alert(document.cookie)', 'must not use the javascript: scheme'],
  ['data:text/html,<script>alert(1)</script>', 'must not use the data: scheme'],
  ['http://example.com/callback', 'must use https (http is allowed only for localhost, 127.0.0.1 and [::1])'],
  ['https://*.example.com/callback', 'must not contain wildcards'],
  ['https://example.com/*', 'must not contain wildcards'],
  ['https://user:pass@example.com/callback', 'must not contain user information'],
  ['https://example.com/callback#section', 'must not contain a fragment'],
  ['/oauth/callback', 'must be an absolute URI'],
  ['callback', 'must be an absolute URI'],
  ['myapp:/callback', 'must use https, or a private-use scheme with a dot'],
  ['myapp://callback', 'must use https, or a private-use scheme with a dot'],
  ['https://example.com/a/../callback', 'must not contain dot segments'],
  ['https://example.com/a/%2e%2e/callback', 'must not contain dot segments'],
  ['https://example.com/call back', 'must not contain spaces'],
  ['https://example.com/cb?code=x', 'must not set the query parameter "code"'],
])('refuses %s', async (uri, reason) => {
  await s.get('/applications/new')
  const res = await s.post('/applications', applicationForm({ redirect_uris: `https://fine.example.com/cb\n${uri}` }))
  expect(res.statusCode).toBe(400)
  const errorBlock = /id="redirect_uris-error">([\s\S]*?)<\/p>/.exec(res.body)?.[1] ?? ''
  expect(errorBlock).toContain('Line 2 (')
  expect(errorBlock).toContain(reason.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;'))
  // The person's input comes back unchanged (escaped) for correction.
  expect(res.body).toContain(
    `https://fine.example.com/cb\n${uri.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')}</textarea>`,
  )
  expect(await t.db.selectFrom('applications').select('id').execute()).toEqual([])
})

it('lists every bad line, each with its own reason', async () => {
  await s.get('/applications/new')
  const res = await s.post(
    '/applications',
    applicationForm({ redirect_uris: 'javascript:x\nhttps://ok.example.com/cb\n\nhttps://example.com/#f' }),
  )
  expect(res.statusCode).toBe(400)
  expect(res.body).toContain('Line 1 (javascript:x) must not use the javascript: scheme.')
  expect(res.body).toContain('Line 4 (https://example.com/#f) must not contain a fragment')
  expect(res.body).not.toContain('Line 2')
})

it('shortens a very long bad line in the message', async () => {
  const long = `http://example.com/${'a'.repeat(200)}`
  await s.get('/applications/new')
  const res = await s.post('/applications', applicationForm({ redirect_uris: long }))
  expect(res.statusCode).toBe(400)
  expect(res.body).toContain(`Line 1 (${long.slice(0, 79)}…) must use https`)
})

it('accepts https, loopback and localhost http, and private-use schemes with a dot', async () => {
  const uris = [
    'https://example.com/callback',
    'https://example.com:8443/oauth/callback?tenant=7',
    'http://localhost:3000/callback',
    'http://127.0.0.1/callback',
    'http://[::1]:8080/callback',
    'com.example.app:/oauth/callback',
  ]
  const created = await createApplicationViaConsole(s, { redirect_uris: uris.join('\n') })
  const row = await t.db.selectFrom('applications').select('redirect_uris').where('id', '=', created.id).executeTakeFirstOrThrow()
  expect(row.redirect_uris).toEqual(uris)
})
