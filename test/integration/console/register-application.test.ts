import { describe, expect, it } from 'vitest'
import { sha256Hex } from '../../../src/lib/crypto.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import {
  type ApplicationFields,
  applicationForm,
  consoleTestFile,
  createApplicationViaConsole,
  expectAccessiblePage,
  storedApplication,
  textById,
} from '../../helpers/console.js'

const { t, developer: alice } = consoleTestFile('alice@example.com')

describe('Your Applications', () => {
  it('sends a logged-out visitor to the log-in page and back', async () => {
    const anonymous = new BrowserSession(t.app)
    const res = await anonymous.get('/applications')
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe('/login?next=%2Fapplications')
    const post = await anonymous.post('/applications', applicationForm())
    expect(post.statusCode).toBe(303)
    expect(post.headers.location).toBe('/login')
  })

  it('lists nothing at first and offers "New application"', async () => {
    const s = await new BrowserSession(t.app).signUpAndLogIn('empty@example.com')
    const res = await s.get('/applications')
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('<h1>Your Applications</h1>')
    expect(res.body).toContain('href="/applications/new"')
    expect(res.body).toContain('not registered any applications')
    expectAccessiblePage(res.body)
  })

  it('shows the new-application form with every scope checked and a label for each field', async () => {
    const res = await alice.get('/applications/new')
    expect(res.statusCode).toBe(200)
    expect(res.headers['cache-control']).toBe('no-store')
    expectAccessiblePage(res.body)
    for (const scope of ['openid', 'email', 'profile', 'read', 'write', 'write_members', 'write_teams', 'write_events', 'write_users']) {
      expect(res.body).toMatch(new RegExp(`id="scope-${scope}" name="scopes" value="${scope}" checked`))
    }
    for (const field of ['name', 'description', 'redirect_uris', 'require_pkce', 'allow_implicit', 'id_token_alg']) {
      expect(res.body).toContain(`<label for="${field}">`)
    }
    expect(res.body).not.toMatch(/id="require_pkce"[^>]*checked/)
    expect(res.body).not.toMatch(/id="allow_implicit"[^>]*checked/)
  })
})

describe('creating an application', () => {
  it('stores it, shows client_id and the secret once, and keeps only the digest', async () => {
    const created = await createApplicationViaConsole(alice, {
      name: 'Team Planner',
      description: 'Plans games',
      redirect_uris: 'https://planner.example.com/cb\r\n\r\n  http://127.0.0.1:8080/cb  \r\nhttps://planner.example.com/cb',
      scopes: ['write', 'read'],
      require_pkce: true,
      allow_implicit: true,
      id_token_alg: 'ES256',
    })
    const { res, clientId, clientSecret } = created

    // Rendered from the POST itself: no redirect, nothing cached.
    expect(res.headers.location).toBeUndefined()
    expect(res.headers['cache-control']).toBe('no-store')
    expect(clientSecret).toMatch(/^gcs_[A-Za-z0-9_-]{43}$/)
    expect(res.body).toContain('cannot be shown again')
    expectAccessiblePage(res.body)

    const row = await storedApplication(t.db, created.id)
    expect(row).toMatchObject({
      client_id: clientId,
      secret_hash: sha256Hex(clientSecret),
      name: 'Team Planner',
      description: 'Plans games',
      redirect_uris: ['https://planner.example.com/cb', 'http://127.0.0.1:8080/cb'],
      allowed_scopes: ['read', 'write'],
      require_pkce: true,
      allow_implicit: true,
      id_token_alg: 'ES256',
    })

    // Later visits: the client_id, never the secret.
    const show = await alice.get(`/applications/${created.id}`)
    expect(show.statusCode).toBe(200)
    expect(textById(show.body, 'client-id')).toBe(clientId)
    expect(show.body).not.toContain('id="client-secret"')
    expect(show.body).not.toContain(clientSecret)
    expectAccessiblePage(show.body)

    const list = await alice.get('/applications')
    expect(list.body).toContain(`href="/applications/${created.id}"`)
    expect(list.body).toContain(clientId)
    expect(list.body).not.toContain(clientSecret)
    for (const page of [list, show, await alice.get(`/applications/${created.id}/edit`)]) {
      expect(page.body).not.toContain(sha256Hex(clientSecret))
    }
  })

  it('escapes what the user typed', async () => {
    const { res, id } = await createApplicationViaConsole(alice, { name: '<script>alert(1)</script>', description: '"quoted" & <b>' })
    expect(res.body).not.toContain('<script>alert(1)</script>')
    expect(res.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    const list = await alice.get('/applications')
    expect(list.body).toContain('&lt;script&gt;')
    expect(list.body).not.toContain('<script>')
    await alice.get(`/applications/${id}/delete`)
    expect((await alice.post(`/applications/${id}/delete`, {})).statusCode).toBe(303)
  })

  it.each<[ApplicationFields, string, string]>([
    [{ name: '' }, 'name', 'Enter a name for the application.'],
    [{ name: '   ' }, 'name', 'Enter a name for the application.'],
    [{ name: 'x'.repeat(101) }, 'name', 'Name must be at most 100 characters.'],
    [{ description: 'd'.repeat(501) }, 'description', 'Description must be at most 500 characters.'],
    [{ redirect_uris: '' }, 'redirect_uris', 'Enter at least one redirect URI'],
    [{ redirect_uris: '\n  \n' }, 'redirect_uris', 'Enter at least one redirect URI'],
    [
      { redirect_uris: Array.from({ length: 21 }, (_, i) => `https://a.example.com/cb${i}`).join('\n') },
      'redirect_uris',
      'Enter at most 20 redirect URIs.',
    ],
    [{ scopes: null }, 'scopes', 'Choose at least one scope.'],
    [{ scopes: ['read', 'admin'] }, 'scopes', 'Choose scopes from the list.'],
  ])('refuses %o with a message beside %s and keeps the input', async (fields, field, message) => {
    const before = await t.db
      .selectFrom('applications')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow()
    await alice.get('/applications/new')
    const res = await alice.post('/applications', applicationForm({ name: 'Kept name', description: 'Kept description', ...fields }))
    expect(res.statusCode).toBe(400)
    expect(res.body).toContain(`id="${field}-error"`)
    expect(res.body).toContain(message)
    expect(res.body).toMatch(new RegExp(`id="${field}"[^>]*aria-describedby="${field}-error"|aria-describedby="${field}-error"`))
    if (fields.name === undefined) expect(res.body).toContain('value="Kept name"')
    if (fields.description === undefined) expect(res.body).toContain('>Kept description</textarea>')
    expect(res.body).not.toContain('id="client-secret"')
    expectAccessiblePage(res.body)
    const after = await t.db
      .selectFrom('applications')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow()
    expect(after.n).toEqual(before.n)
  })

  it('keeps the checkboxes as submitted when the form comes back', async () => {
    await alice.get('/applications/new')
    const res = await alice.post('/applications', applicationForm({ name: '', scopes: ['write_teams'], require_pkce: true }))
    expect(res.statusCode).toBe(400)
    expect(res.body).toMatch(/id="scope-write_teams" name="scopes" value="write_teams" checked/)
    expect(res.body).not.toMatch(/id="scope-read" name="scopes" value="read" checked/)
    expect(res.body).toMatch(/id="require_pkce"[^>]*checked/)
    expect(res.body).not.toMatch(/id="allow_implicit"[^>]*checked/)
  })

  it('refuses a form without a CSRF token and creates nothing', async () => {
    const before = await t.db.selectFrom('applications').select('id').execute()
    await alice.get('/applications/new')
    const res = await alice.post('/applications', { ...applicationForm({ name: 'Forged' }), _csrf: null })
    expect(res.statusCode).toBe(403)
    expect(res.headers['content-type']).toMatch(/text\/html/)
    const forged = await alice.post('/applications', { ...applicationForm({ name: 'Forged' }), _csrf: 'not-the-token' })
    expect(forged.statusCode).toBe(403)
    expect(await t.db.selectFrom('applications').select('id').execute()).toHaveLength(before.length)
  })
})
