import { describe, expect, it } from 'vitest'
import { sha256Hex } from '../../../src/lib/crypto.js'
import {
  applicationForm,
  consoleTestFile,
  createApplicationViaConsole,
  expectAccessiblePage,
  storedApplication,
  textById,
} from '../../helpers/console.js'

const { t, developer: alice } = consoleTestFile('alice@example.com')

describe('editing an application', () => {
  it('turns "Require pushed authorization requests" on and off, shown on the page and in the audit log', async () => {
    const created = await createApplicationViaConsole(alice, { name: 'Pushy', scopes: ['read'] })
    expect((await storedApplication(t.db, created.id))?.require_pushed_requests).toBe(false)
    const edit = await alice.get(`/applications/${created.id}/edit`)
    expect(edit.body).toMatch(/id="require_pushed_requests" name="require_pushed_requests" value="on">/)
    const on = await alice.post(
      `/applications/${created.id}`,
      applicationForm({ name: 'Pushy', scopes: ['read'], require_pushed_requests: true }),
    )
    expect(on.statusCode).toBe(303)
    expect((await storedApplication(t.db, created.id))?.require_pushed_requests).toBe(true)
    const page = await alice.get(`/applications/${created.id}`)
    expectAccessiblePage(page.body)
    expect(page.body).toMatch(/<dt>Require pushed authorization requests<\/dt>\s*<dd>Yes<\/dd>/)
    expect((await alice.get(`/applications/${created.id}/edit`)).body).toMatch(/id="require_pushed_requests"[^>]*checked/)
    const event = await t.db
      .selectFrom('audit_events')
      .select('detail')
      .where('event', '=', 'application.updated')
      .orderBy('occurred_at', 'desc')
      .executeTakeFirst()
    expect(event?.detail).toContain('pushed request requirement')
    await alice.post(`/applications/${created.id}`, applicationForm({ name: 'Pushy', scopes: ['read'] }))
    expect((await storedApplication(t.db, created.id))?.require_pushed_requests).toBe(false)
  })

  it('shows the form prefilled and saves the changes', async () => {
    const created = await createApplicationViaConsole(alice, {
      name: 'Before',
      redirect_uris: 'https://before.example.com/cb',
      scopes: ['read'],
    })
    const edit = await alice.get(`/applications/${created.id}/edit`)
    expect(edit.statusCode).toBe(200)
    expectAccessiblePage(edit.body)
    expect(edit.body).toContain('value="Before"')
    expect(edit.body).toContain('>https://before.example.com/cb</textarea>')
    expect(edit.body).toMatch(/id="scope-read" name="scopes" value="read" checked/)
    expect(edit.body).not.toMatch(/id="scope-write" name="scopes" value="write" checked/)
    expect(edit.body).toContain(`action="/applications/${created.id}"`)

    t.clock.advance(60_000)
    const res = await alice.post(
      `/applications/${created.id}`,
      applicationForm({
        name: 'After',
        description: 'Now described',
        redirect_uris: 'https://after.example.com/cb\ncom.example.after:/oauth',
        scopes: ['read', 'write_events'],
        require_pkce: true,
      }),
    )
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe(`/applications/${created.id}?updated=1`)

    const row = await storedApplication(t.db, created.id)
    expect(row).toMatchObject({
      name: 'After',
      description: 'Now described',
      redirect_uris: ['https://after.example.com/cb', 'com.example.after:/oauth'],
      allowed_scopes: ['read', 'write_events'],
      require_pkce: true,
      allow_implicit: false,
      client_id: created.clientId,
      secret_hash: sha256Hex(created.clientSecret),
    })
    expect(row!.updated_at.getTime()).toBeGreaterThan(row!.created_at.getTime())

    const show = await alice.get(res.headers.location as string)
    expect(show.body).toContain('Application updated.')
    expect(show.body).toContain('<h1>After</h1>')
    expect(show.body).not.toContain('id="client-secret"')
  })

  it('refuses bad input with 400, keeps it, and changes nothing', async () => {
    const created = await createApplicationViaConsole(alice, { name: 'Stable' })
    await alice.get(`/applications/${created.id}/edit`)
    const res = await alice.post(
      `/applications/${created.id}`,
      applicationForm({ name: 'Renamed', redirect_uris: 'https://ok.example.com/cb\nhttp://evil.example.com/cb' }),
    )
    expect(res.statusCode).toBe(400)
    expect(res.body).toContain('Line 2 (http://evil.example.com/cb) must use https')
    expect(res.body).toContain('value="Renamed"')
    expect(res.body).toContain('https://ok.example.com/cb\nhttp://evil.example.com/cb</textarea>')
    expectAccessiblePage(res.body)
    expect((await storedApplication(t.db, created.id))?.name).toBe('Stable')
  })
})

describe('regenerating the secret', () => {
  it('shows a new secret once; the stored digest is the new one and the old secret no longer matches', async () => {
    const created = await createApplicationViaConsole(alice, { name: 'Rotator' })
    const show = await alice.get(`/applications/${created.id}`)
    expect(show.body).toContain(`href="/applications/${created.id}/secret"`)
    // Asks first: the old secret dies with the click, and with it any deployed client using it.
    const confirm = await alice.get(`/applications/${created.id}/secret`)
    expect(confirm.statusCode).toBe(200)
    expectAccessiblePage(confirm.body)
    expect(confirm.body).toContain('<h1>Generate a new secret for Rotator?</h1>')
    expect(confirm.body).toContain(`action="/applications/${created.id}/secret"`)
    expect((await storedApplication(t.db, created.id))?.secret_hash).toBe(sha256Hex(created.clientSecret))
    t.clock.advance(1000)
    const res = await alice.post(`/applications/${created.id}/secret`, {})
    expect(res.statusCode).toBe(200)
    expect(res.headers['cache-control']).toBe('no-store')
    expectAccessiblePage(res.body)
    const newSecret = textById(res.body, 'client-secret')
    expect(newSecret).toMatch(/^gcs_/)
    expect(newSecret).not.toBe(created.clientSecret)
    expect(textById(res.body, 'client-id')).toBe(created.clientId)
    expect(res.body).toContain('previous secret no longer works')

    const row = await storedApplication(t.db, created.id)
    expect(row?.secret_hash).toBe(sha256Hex(newSecret!))
    expect(row?.secret_hash).not.toBe(sha256Hex(created.clientSecret))
    expect(row?.client_id).toBe(created.clientId)

    const later = await alice.get(`/applications/${created.id}`)
    expect(later.body).not.toContain(newSecret!)
    expect(later.body).not.toContain('id="client-secret"')
  })

  it('needs the CSRF token', async () => {
    const created = await createApplicationViaConsole(alice, { name: 'Guarded' })
    const res = await alice.post(`/applications/${created.id}/secret`, { _csrf: null })
    expect(res.statusCode).toBe(403)
    expect((await storedApplication(t.db, created.id))?.secret_hash).toBe(sha256Hex(created.clientSecret))
  })
})

describe("an operator's verification and the owner's edits", () => {
  // docs/operating/admin.md "Verified applications and the consent page": a verified application, renamed and pointed elsewhere, stayed verified.
  const base = {
    name: 'Vouched For',
    redirect_uris: 'https://vouched.example.com/cb',
    homepage_url: 'https://vouched.example.com/',
    privacy_policy_url: 'https://vouched.example.com/privacy',
    scopes: ['read'],
  }
  async function verifiedApplication() {
    const created = await createApplicationViaConsole(alice, base)
    await t.db.updateTable('applications').set({ verified_at: t.clock() }).where('id', '=', created.id).execute()
    return created
  }
  const auditEvents = (clientId: string) =>
    t.db.selectFrom('audit_events').select(['event', 'detail']).where('client_id', '=', clientId).orderBy('id').execute()

  it('withdraws it when the name, a redirect URI, the homepage or the privacy link changes, and says so', async () => {
    for (const change of [
      { name: 'Something Else' },
      { redirect_uris: 'https://vouched.example.com/cb\nhttps://evil.example/cb' },
      { homepage_url: 'https://evil.example/' },
      { privacy_policy_url: '' },
    ]) {
      const created = await verifiedApplication()
      const res = await alice.post(`/applications/${created.id}`, applicationForm({ ...base, ...change }))
      expect(res.statusCode, JSON.stringify(change)).toBe(303)
      expect((await storedApplication(t.db, created.id))?.verified_at, JSON.stringify(change)).toBeNull()
      const page = await alice.get(res.headers.location as string)
      expect(page.body).toContain('it needs verifying again by the operator')
      expect(page.body).toMatch(/<dt>Verified by [^<]*<\/dt>\s*<dd>No<\/dd>/)
      expect(await auditEvents(created.clientId)).toContainEqual({
        event: 'application.verification_cleared',
        detail: 'The application needs verifying again',
      })
    }
  })

  it('keeps it when only the scopes, PKCE or the description change', async () => {
    const created = await verifiedApplication()
    const res = await alice.post(
      `/applications/${created.id}`,
      applicationForm({ ...base, scopes: ['read', 'write'], require_pkce: true, description: 'Now described' }),
    )
    expect(res.headers.location).toBe(`/applications/${created.id}?updated=1`)
    expect((await storedApplication(t.db, created.id))?.verified_at).not.toBeNull()
    expect((await auditEvents(created.clientId)).map((e) => e.event)).not.toContain('application.verification_cleared')
  })
})
