import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { applicationForm, buildConsoleTest, createApplicationViaConsole, storedApplication } from '../../helpers/console.js'

let t: TestContext
let alice: BrowserSession
let bob: BrowserSession

beforeAll(async () => {
  ;({ t, developer: alice } = await buildConsoleTest('alice@example.com'))
  bob = await new BrowserSession(t.app).signUpAndLogIn('bob@example.com')
})
afterAll(async () => {
  await t?.close()
})

describe("another user's application", () => {
  it('is a 404 page on every route and stays unchanged', async () => {
    const created = await createApplicationViaConsole(alice, { name: 'Private' })
    const before = await storedApplication(t.db, created.id)
    await bob.get('/applications')

    const attempts = [
      () => bob.get(`/applications/${created.id}`),
      () => bob.get(`/applications/${created.id}/edit`),
      () => bob.get(`/applications/${created.id}/delete`),
      () => bob.get(`/applications/${created.id}/secret`),
      () => bob.post(`/applications/${created.id}`, applicationForm({ name: 'Hijacked' })),
      () => bob.post(`/applications/${created.id}/secret`, {}),
      () => bob.post(`/applications/${created.id}/delete`, {}),
    ]
    for (const attempt of attempts) {
      const res = await attempt()
      expect(res.statusCode).toBe(404)
      expect(res.headers['content-type']).toMatch(/text\/html/)
      expect(res.body).toContain('<h1>Not found</h1>')
      expect(res.body).not.toContain('Private')
      expect(res.body).not.toContain(created.clientId)
    }
    expect(await storedApplication(t.db, created.id)).toEqual(before)
    expect((await bob.get('/applications')).body).not.toContain(created.clientId)
  })

  it('answers the same 404 for unknown and malformed ids', async () => {
    for (const path of [
      '/applications/00000000-0000-4000-8000-000000000000',
      '/applications/not-a-uuid',
      '/applications/1/edit',
      "/applications/'%3B--/delete",
    ]) {
      expect((await alice.get(path)).statusCode).toBe(404)
    }
    await alice.get('/applications')
    expect((await alice.post('/applications/not-a-uuid/secret', {})).statusCode).toBe(404)
    expect((await alice.post('/applications/00000000-0000-4000-8000-000000000000/delete', {})).statusCode).toBe(404)
  })

  // Found by the fuzz (test/integration/fuzz/): the router refuses these before any route runs,
  // and Fastify's default answer was its JSON error body ({"code":"FST_ERR_BAD_URL",...}).
  it('answers an id that does not percent-decode, or is past the router limit, with an error page', async () => {
    for (const [method, path, status] of [
      ['GET', '/applications/%zz', 400],
      ['GET', '/applications/%C3/edit', 400],
      ['HEAD', '/applications/%E4%B8/delete', 400],
      ['POST', '/applications/%zz/secret', 400],
      ['GET', '/%zz', 400],
      ['GET', `/applications/${'a'.repeat(101)}`, 414],
    ] as const) {
      const res = await t.app.inject({ method, url: path, headers: { cookie: alice.cookieHeader } })
      expect(res.statusCode, `${method} ${path}`).toBe(status)
      expect(res.headers['content-type'], `${method} ${path}`).toBe('text/html; charset=utf-8')
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'")
      if (method !== 'HEAD') expect(res.body).toContain('<h1>Request refused</h1>')
    }
  })
})
