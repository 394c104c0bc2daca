import { describe, expect, it } from 'vitest'
import {
  type ApplicationFields,
  applicationForm,
  consoleTestFile,
  createApplicationViaConsole,
  expectAccessiblePage,
} from '../../helpers/console.js'

/*
 * "Homepage URL" and "Privacy policy URL" in the console's application form (docs/operating/admin.md): optional, shown on the consent page, so https only, without userinfo (which
 * makes a link read as another host), without control characters, at most 500 characters.
 * Empty means none.
 */

const { t, developer: dev } = consoleTestFile('links-dev@example.com')

function storedLinks(id: string) {
  return t.db.selectFrom('applications').select(['homepage_url', 'privacy_policy_url']).where('id', '=', id).executeTakeFirstOrThrow()
}

async function applicationCount(): Promise<number> {
  return (await t.db.selectFrom('applications').select('id').execute()).length
}

const FIELDS = [
  { field: 'homepage_url', label: 'Homepage URL' },
  { field: 'privacy_policy_url', label: 'Privacy policy URL' },
] as const

const HTTPS_ONLY = 'must be an https:// address, such as https://example.com/.'
/** A valid https URL of exactly `n` characters. */
const urlOfLength = (n: number) => {
  const base = 'https://planner.example/'
  return base + 'a'.repeat(n - base.length)
}

const REFUSED: Array<{ value: string; message: string; why: string }> = [
  { why: 'http', value: 'http://planner.example/', message: HTTPS_ONLY },
  { why: 'javascript:', value: 'javascript:alert(1)', message: HTTPS_ONLY },
  { why: 'JavaScript: in capitals', value: 'JavaScript:alert(document.cookie)', message: HTTPS_ONLY },
  { why: 'data:', value: 'data:text/html,<script>alert(1)</script>', message: HTTPS_ONLY },
  { why: 'userinfo', value: 'https://a@b.example/', message: HTTPS_ONLY },
  { why: 'userinfo with a password', value: 'https://bigbank.example:pw@evil.example/', message: HTTPS_ONLY },
  { why: 'a control character', value: 'https://planner.example/\u0001x', message: HTTPS_ONLY },
  { why: 'DEL', value: 'https://planner.example/\u007fx', message: HTTPS_ONLY },
  { why: 'a line break inside', value: 'https://planner.example/\r\nx', message: HTTPS_ONLY },
  { why: 'a space inside', value: 'https://planner.example/a b', message: HTTPS_ONLY },
  { why: 'no scheme', value: 'planner.example', message: HTTPS_ONLY },
  { why: 'scheme-relative', value: '//planner.example/', message: HTTPS_ONLY },
  { why: 'another scheme', value: 'ftp://planner.example/', message: HTTPS_ONLY },
  { why: 'over 500 characters', value: urlOfLength(501), message: 'must be at most 500 characters.' },
]

describe('registering an application with links', () => {
  it('stores https links, and shows them on the application page', async () => {
    const created = await createApplicationViaConsole(dev, {
      name: 'Linked',
      homepage_url: 'https://planner.example',
      privacy_policy_url: '  https://planner.example/privacy?lang=en  ',
    })
    // Stored as the URL parser writes them: what the consent page will link to.
    expect(await storedLinks(created.id)).toEqual({
      homepage_url: 'https://planner.example/',
      privacy_policy_url: 'https://planner.example/privacy?lang=en',
    })
    const page = await dev.get(`/applications/${created.id}`)
    expect(page.body).toContain('<a href="https://planner.example/" rel="noopener noreferrer">https://planner.example/</a>')
    expect(page.body).toContain(
      '<a href="https://planner.example/privacy?lang=en" rel="noopener noreferrer">https://planner.example/privacy?lang=en</a>',
    )
  })

  it('takes empty (or blank) as none', async () => {
    for (const value of ['', '   ']) {
      const created = await createApplicationViaConsole(dev, { name: 'No links', homepage_url: value, privacy_policy_url: value })
      expect(await storedLinks(created.id)).toEqual({ homepage_url: null, privacy_policy_url: null })
      const page = await dev.get(`/applications/${created.id}`)
      expect(page.body).toMatch(/<dt>Homepage<\/dt>\s*<dd>None<\/dd>/)
      expect(page.body).toMatch(/<dt>Privacy policy<\/dt>\s*<dd>None<\/dd>/)
    }
  })

  it('accepts exactly 500 characters', async () => {
    const created = await createApplicationViaConsole(dev, { name: 'Long link', homepage_url: urlOfLength(500) })
    expect((await storedLinks(created.id)).homepage_url).toBe(urlOfLength(500))
  })

  for (const { field, label } of FIELDS) {
    it(`refuses a bad ${label} with 400 and a field error, keeps the input, and stores nothing`, async () => {
      for (const { why, value, message } of REFUSED) {
        const before = await applicationCount()
        await dev.get('/applications/new')
        const res = await dev.post('/applications', applicationForm({ name: `Bad ${field}`, [field]: value } as ApplicationFields))
        expect(res.statusCode, why).toBe(400)
        expect(res.body, why).toMatch(new RegExp(`<p class="field-error" id="${field}-error">${label} ${escapeRegExp(message)}</p>`))
        expect(res.body, why).toMatch(new RegExp(`id="${field}"[^>]*aria-invalid="true" aria-describedby="${field}-error"`))
        // The other link field is not blamed.
        const other = FIELDS.find((f) => f.field !== field)!.field
        expect(res.body, why).not.toContain(`id="${other}-error"`)
        expect(res.body, why).toContain('value="Bad ')
        expectAccessiblePage(res.body)
        expect(await applicationCount(), why).toBe(before)
      }
    })
  }
})

describe('editing the links', () => {
  it('shows them in the form and saves changes, including removing one; a bad one changes nothing', async () => {
    const created = await createApplicationViaConsole(dev, {
      name: 'Editable',
      homepage_url: 'https://before.example/',
      privacy_policy_url: 'https://before.example/privacy',
    })
    const edit = await dev.get(`/applications/${created.id}/edit`)
    expect(edit.statusCode).toBe(200)
    expectAccessiblePage(edit.body)
    expect(edit.body).toMatch(/id="homepage_url" name="homepage_url" type="url"[^>]*value="https:\/\/before\.example\/"/)
    expect(edit.body).toMatch(/id="privacy_policy_url" name="privacy_policy_url" type="url"[^>]*value="https:\/\/before\.example\/privacy"/)

    // What the browser sends back unchanged is kept as it was.
    const unchanged = await dev.post(
      `/applications/${created.id}`,
      applicationForm({ name: 'Editable', homepage_url: 'https://before.example/', privacy_policy_url: 'https://before.example/privacy' }),
    )
    expect(unchanged.statusCode).toBe(303)
    expect(await storedLinks(created.id)).toEqual({
      homepage_url: 'https://before.example/',
      privacy_policy_url: 'https://before.example/privacy',
    })

    await dev.get(`/applications/${created.id}/edit`)
    const changed = await dev.post(
      `/applications/${created.id}`,
      applicationForm({ name: 'Editable', homepage_url: 'https://after.example/home', privacy_policy_url: '' }),
    )
    expect(changed.statusCode).toBe(303)
    expect(await storedLinks(created.id)).toEqual({ homepage_url: 'https://after.example/home', privacy_policy_url: null })
    const again = await dev.get(`/applications/${created.id}/edit`)
    expect(again.body).toMatch(/id="homepage_url"[^>]*value="https:\/\/after\.example\/home"/)
    expect(again.body).toMatch(/id="privacy_policy_url"[^>]*value=""/)

    const refused = await dev.post(
      `/applications/${created.id}`,
      applicationForm({ name: 'Renamed', homepage_url: 'https://after.example/home', privacy_policy_url: 'http://after.example/privacy' }),
    )
    expect(refused.statusCode).toBe(400)
    expect(refused.body).toContain('Privacy policy URL must be an https:// address')
    expect(refused.body).toContain('value="http://after.example/privacy"')
    expect(await storedLinks(created.id)).toEqual({ homepage_url: 'https://after.example/home', privacy_policy_url: null })
    const row = await t.db.selectFrom('applications').select('name').where('id', '=', created.id).executeTakeFirstOrThrow()
    expect(row.name).toBe('Editable')
  })
})

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
}
