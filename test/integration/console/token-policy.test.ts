import { describe, expect, it } from 'vitest'
import { BrowserSession } from '../../helpers/browser-session.js'
import { consoleTestFile, createApplicationViaConsole, expectAccessiblePage, storedApplication } from '../../helpers/console.js'

/*
 * The token policy on the owner's pages (docs/applications.md "Token policy"): DPoP optional or
 * required, and tokens valid until revoked or expiring with rotating refresh tokens, chosen
 * from presets on a page that says what the change does before it is saved.
 */

const { t, developer: alice } = consoleTestFile('policy-owner@example.com')

const policyOf = async (id: string) => {
  const row = await storedApplication(t.db, id)
  return { dpop: row?.require_dpop, access: row?.access_token_ttl_seconds, refresh: row?.refresh_token_ttl_seconds }
}

const lastPolicyEvent = () =>
  t.db
    .selectFrom('audit_events')
    .select(['detail', 'user_id', 'client_id'])
    .where('event', '=', 'application.token_policy_changed')
    .orderBy('occurred_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirst()

describe('the token policy of an application', () => {
  it("starts as the seed's default, shown on the application page: DPoP optional, valid until revoked", async () => {
    const created = await createApplicationViaConsole(alice, { name: 'Defaults' })
    expect(await policyOf(created.id)).toEqual({ dpop: false, access: null, refresh: null })
    const page = await alice.get(`/applications/${created.id}`)
    expect(page.body).toContain('<h2>Tokens</h2>')
    expect(page.body).toMatch(/<dt>DPoP<\/dt>\s*<dd>Optional: a client that sends a DPoP proof gets a bound token/)
    expect(page.body).toMatch(/<dt>Access tokens<\/dt>\s*<dd>Valid until revoked<\/dd>/)
    expect(page.body).toContain(`href="/applications/${created.id}/tokens"`)
  })

  it('explains the consequences, then requires DPoP and expiring tokens; stored, shown and audited with before and after', async () => {
    const created = await createApplicationViaConsole(alice, { name: 'Tightened' })
    const form = await alice.get(`/applications/${created.id}/tokens`)
    expect(form.statusCode).toBe(200)
    expectAccessiblePage(form.body)
    expect(form.body).toContain('<h1>Token policy of Tightened</h1>')
    expect(form.body).toContain('is refused at the token endpoint (<code>invalid_dpop_proof</code>)')
    expect(form.body).toContain('Tokens already issued as bearer tokens stay valid until revoked')
    expect(form.body).toContain('chains of refresh tokens already made keep the lifetimes they were made with')
    expect(form.body).toMatch(/id="dpop-optional" name="dpop" value="optional" checked/)
    expect(form.body).toMatch(/id="lifetime-until-revoked" name="lifetime" value="until-revoked" checked/)
    expect(form.body).toContain('<option value="8h">8 hours</option>')
    expect(form.body).toContain('<option value="180d">180 days</option>')

    t.clock.advance(1000)
    const res = await alice.post(`/applications/${created.id}/tokens`, {
      dpop: 'required',
      lifetime: 'expiring',
      access_lifetime: '8h',
      refresh_lifetime: '90d',
    })
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('Token policy changed: DPoP required, access tokens 8 hours, refresh tokens 90 days.')
    expect(res.body).toMatch(/<dt>Access tokens<\/dt>\s*<dd>Expire after 8 hours<\/dd>/)
    expect(res.body).toMatch(/<dt>Refresh tokens<\/dt>\s*<dd>Rotate at each use; unused, one expires after 90 days<\/dd>/)
    expect(await policyOf(created.id)).toEqual({ dpop: true, access: 8 * 3600, refresh: 90 * 86400 })
    const event = await lastPolicyEvent()
    expect(event).toMatchObject({ client_id: created.clientId })
    expect(event?.detail).toBe(
      'Before: DPoP optional, tokens valid until revoked. After: DPoP required, access tokens 8 hours, refresh tokens 90 days',
    )

    // The form comes back prefilled with what is stored.
    const again = await alice.get(`/applications/${created.id}/tokens`)
    expect(again.body).toMatch(/id="dpop-required" name="dpop" value="required" checked/)
    expect(again.body).toMatch(/id="lifetime-expiring" name="lifetime" value="expiring" checked/)
    expect(again.body).toContain('<option value="8h" selected>8 hours</option>')
    expect(again.body).toContain('<option value="90d" selected>90 days</option>')

    // Back to the default: both lifetimes null again, as migration 0022's check wants.
    const back = await alice.post(`/applications/${created.id}/tokens`, {
      dpop: 'optional',
      lifetime: 'until-revoked',
      access_lifetime: '8h',
    })
    expect(back.statusCode).toBe(200)
    expect(await policyOf(created.id)).toEqual({ dpop: false, access: null, refresh: null })
    expect((await lastPolicyEvent())?.detail).toBe(
      'Before: DPoP required, access tokens 8 hours, refresh tokens 90 days. After: DPoP optional, tokens valid until revoked',
    )
  })

  it('saving the same policy records nothing', async () => {
    const created = await createApplicationViaConsole(alice, { name: 'Unchanged' })
    await alice.get(`/applications/${created.id}/tokens`)
    const before = await t.db.selectFrom('audit_events').select('id').where('event', '=', 'application.token_policy_changed').execute()
    const res = await alice.post(`/applications/${created.id}/tokens`, { dpop: 'optional', lifetime: 'until-revoked' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('Token policy unchanged: DPoP optional, tokens valid until revoked.')
    const after = await t.db.selectFrom('audit_events').select('id').where('event', '=', 'application.token_policy_changed').execute()
    expect(after).toHaveLength(before.length)
  })

  it.each([
    ['no DPoP choice', { lifetime: 'until-revoked' }, 'Choose whether DPoP is optional or required.'],
    ['an unknown DPoP choice', { dpop: 'sometimes', lifetime: 'until-revoked' }, 'Choose whether DPoP is optional or required.'],
    ['no lifetime choice', { dpop: 'optional' }, 'Choose tokens valid until revoked or expiring tokens.'],
    [
      'a typed lifetime',
      { dpop: 'optional', lifetime: 'expiring', access_lifetime: '3600' },
      'Choose an access-token lifetime from the list.',
    ],
    [
      'a refresh lifetime not offered',
      { dpop: 'optional', lifetime: 'expiring', refresh_lifetime: '10y' },
      'Choose a refresh-token lifetime from the list.',
    ],
    ['a repeated field', { dpop: ['optional', 'required'], lifetime: 'until-revoked' }, 'Choose whether DPoP is optional or required.'],
  ])('refuses %s with 400 and changes nothing', async (_, fields, message) => {
    const created = await createApplicationViaConsole(alice, { name: 'Refused' })
    await alice.get(`/applications/${created.id}/tokens`)
    const res = await alice.post(`/applications/${created.id}/tokens`, fields)
    expect(res.statusCode).toBe(400)
    expect(res.body).toContain(`<p class="form-error" role="alert" id="policy-error">${message}</p>`)
    expectAccessiblePage(res.body)
    expect(await policyOf(created.id)).toEqual({ dpop: false, access: null, refresh: null })
  })

  it('refuses a form without its CSRF token, or from another site, and changes nothing', async () => {
    const created = await createApplicationViaConsole(alice, { name: 'Guarded policy' })
    await alice.get(`/applications/${created.id}/tokens`)
    const fields = { dpop: 'required', lifetime: 'expiring', access_lifetime: '1h', refresh_lifetime: '30d' }
    expect((await alice.post(`/applications/${created.id}/tokens`, { ...fields, _csrf: null })).statusCode).toBe(403)
    expect((await alice.post(`/applications/${created.id}/tokens`, { ...fields, _csrf: 'not-the-token' })).statusCode).toBe(403)
    const crossSite = await alice.post(`/applications/${created.id}/tokens`, fields, {
      origin: 'https://evil.example',
      'sec-fetch-site': 'cross-site',
    })
    expect(crossSite.statusCode).toBe(403)
    expect(await policyOf(created.id)).toEqual({ dpop: false, access: null, refresh: null })
  })

  it("is another owner's application's: 404 for the page and the form", async () => {
    const created = await createApplicationViaConsole(alice, { name: 'Mine' })
    const mallory = await new BrowserSession(t.app).signUpAndLogIn('policy-stranger@example.com')
    expect((await mallory.get(`/applications/${created.id}/tokens`)).statusCode).toBe(404)
    const res = await mallory.post(`/applications/${created.id}/tokens`, { dpop: 'required', lifetime: 'until-revoked' })
    expect(res.statusCode).toBe(404)
    expect((await mallory.get('/applications/not-a-uuid/tokens')).statusCode).toBe(404)
    expect(await policyOf(created.id)).toEqual({ dpop: false, access: null, refresh: null })
  })

  it('a machine: DPoP and the access lifetime apply, refresh tokens never (RFC 6749 §4.4.3)', async () => {
    const created = await createApplicationViaConsole(alice, { name: 'Robot', kind: 'machine' })
    const form = await alice.get(`/applications/${created.id}/tokens`)
    expectAccessiblePage(form.body)
    expect(form.body).not.toContain('id="refresh_lifetime"')
    expect(form.body).toContain('a machine never gets a refresh token (RFC 6749 §4.4.3)')
    const res = await alice.post(`/applications/${created.id}/tokens`, {
      dpop: 'optional',
      lifetime: 'expiring',
      access_lifetime: '1h',
      refresh_lifetime: '180d',
    })
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('Token policy changed: DPoP optional, access tokens 1 hour.')
    expect(res.body).toMatch(/<dt>Refresh tokens<\/dt>\s*<dd>None: a machine asks for a new token with its secret/)
    // The refresh column holds the first preset (the check keeps the lifetimes together); it applies only if the kind changes.
    expect(await policyOf(created.id)).toEqual({ dpop: false, access: 3600, refresh: 30 * 86400 })
  })
})
