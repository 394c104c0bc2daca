import { describe, expect, it } from 'vitest'
import { applicationForm, consoleTestFile, createApplicationViaConsole } from '../../helpers/console.js'

/*
 * Registration accepts https, http only for loopback and localhost, and private-use schemes with
 * a dot; never javascript:, data:, wildcards, userinfo or fragments (docs/decisions/
 * 001-redirect-uri-matching.md). Each refusal names the line and the reason beside the field.
 */

const { t, developer: s } = consoleTestFile('uris@example.com')

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
  ['https://example.com/cb?x=1;code=evil', 'must not set the query parameter "code"'],
  ['https://example.com/cb?State=1', 'must not set the query parameter "State" (read as state)'],
  ['https://example.com/cb?CODE=1', 'must not set the query parameter "CODE" (read as code)'],
  ['https://example.com/cb?expires_in=1', 'must not set the query parameter "expires_in"'],
  ['com.example.app://cb', 'must have a single slash after a private-use scheme, as in com.example.app:/callback'],
  ['https://bücher.example/café', 'may contain non-ASCII characters only in the host name'],
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

describe('an internationalised host name (IDNA)', () => {
  const ascii = 'https://xn--bcher-kva.example/cb'

  it('is registered in its ASCII form, and the page says so', async () => {
    const created = await createApplicationViaConsole(s, { redirect_uris: 'https://bücher.example/cb' })
    const row = await t.db.selectFrom('applications').select('redirect_uris').where('id', '=', created.id).executeTakeFirstOrThrow()
    expect(row.redirect_uris).toEqual([ascii])
    expect(created.res.body).toContain(`https://bücher.example/cb is stored as ${ascii}: the ASCII (IDNA) form of the host name`)
    const page = await s.get(`/applications/${created.id}`)
    expect(page.body).toContain(`<code>${ascii}</code> <span class="hint">(host bücher.example, stored in its ASCII form`)
  })

  it('is converted on edit as well, and the typed and ASCII forms count as one URI', async () => {
    const created = await createApplicationViaConsole(s)
    await s.get(`/applications/${created.id}/edit`)
    const res = await s.post(`/applications/${created.id}`, applicationForm({ redirect_uris: `https://Bücher.example/cb\n${ascii}` }))
    expect(res.statusCode).toBe(303)
    const row = await t.db.selectFrom('applications').select('redirect_uris').where('id', '=', created.id).executeTakeFirstOrThrow()
    expect(row.redirect_uris).toEqual([ascii])
    expect((await s.get(`/applications/${created.id}`)).body).toContain('(host bücher.example, stored in its ASCII form')
  })

  it('is matched at /oauth/authorize in the form a client sends', async () => {
    const created = await createApplicationViaConsole(s, { redirect_uris: 'https://bücher.example/cb' })
    const sent = new URL('https://bücher.example/cb/done').href
    const res = await s.get(
      `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: created.clientId, redirect_uri: sent })}`,
    )
    expect(res.statusCode, res.body.slice(0, 300)).toBe(200)
    expect(res.body).toContain('xn--bcher-kva.example')
  })
})
