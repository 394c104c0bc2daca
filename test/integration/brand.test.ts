import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestContext, TEST_ISSUER, buildTestApp } from '../helpers/app.js'
import { BRAND_LOGO_FIXTURE } from '../helpers/brand.js'
import { authorizeUrl, createClient, loggedInUser } from './oauth/helpers.js'

/*
 * The operator's brand (docs/operating/branding.md): the logo, served so that an SVG's script can
 * never run, in the header of every page, the consent page included, and in mails by its absolute
 * URL; the accent colour in the stylesheet and in mails. Without brand settings, no logo at all.
 */

let t: TestContext
beforeAll(async () => {
  t = await buildTestApp({ SERVICE_NAME: 'Acme ID', BRAND_ACCENT_COLOR: '#1F6F43', BRAND_LOGO_FILE: BRAND_LOGO_FIXTURE })
})
afterAll(() => t?.close())

const logoSrc = (html: string) => /<img src="([^"]+)" alt="" class="brand-logo">/.exec(html)?.[1]

describe('the logo', () => {
  it('is served as the file it is, unsniffable, under a policy that lets no script run, cacheable', async () => {
    for (const method of ['GET', 'HEAD'] as const) {
      const res = await t.app.inject({ method, url: '/static/brand-logo' })
      expect(res.statusCode).toBe(200)
      expect(res.headers['content-type']).toBe('image/svg+xml')
      expect(res.headers['x-content-type-options']).toBe('nosniff')
      expect(res.headers['content-security-policy']).toBe("default-src 'none'; style-src 'unsafe-inline'; sandbox")
      expect(res.headers['cache-control']).toBe('public, max-age=86400')
      if (method === 'GET') expect(res.rawPayload.equals(readFileSync(BRAND_LOGO_FIXTURE))).toBe(true)
    }
  })

  it('is in the header of every page, beside the service name, named by its version', async () => {
    // The last is refused by the router itself (src/http/error-pages.ts routerRefusalPage).
    for (const url of ['/', '/login', '/signup', '/no-such-page', '/%zz']) {
      const page = await t.app.inject(url)
      expect(logoSrc(page.body)).toMatch(/^\/static\/brand-logo\?v=[A-Za-z0-9_-]{12}$/)
      expect(page.body).toMatch(/<a class="brand" href="\/"><img [^>]+>Acme ID<\/a>/)
    }
  })

  it('heads the consent page, which stays unframeable', async () => {
    const client = await createClient(t.db, { name: 'Team Planner' })
    const s = await loggedInUser(t.app)
    const consent = await s.get(
      authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: client.redirectUri, scope: 'read', state: 's' }),
    )
    expect(consent.statusCode).toBe(200)
    expect(consent.body).toContain('Authorize Team Planner')
    expect(logoSrc(consent.body)).toMatch(/^\/static\/brand-logo\?v=/)
    expect(consent.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/)
    expect(consent.headers['content-security-policy']).toMatch(/img-src 'self'/)
  })
})

describe('the accent colour', () => {
  it("ends the stylesheet, overriding the default, and the pages' CSP still forbids inline styles", async () => {
    const css = await t.app.inject('/static/app.css')
    expect(css.body.trimEnd().split('\n').at(-1)).toBe(':root { --accent: #1f6f43; }')
    expect(css.body).toContain('--accent: #0969da')
    const home = await t.app.inject('/')
    expect(home.headers['content-security-policy']).toMatch(/style-src 'self'(;|$)/)
  })
})

describe('mails', () => {
  it('carry the logo by its absolute URL and links in the accent colour, in the HTML part only', async () => {
    const s = await loggedInUser(t.app)
    const mail = t.mailbox.last(s.email)
    expect(mail.subject).toBe('Verify your email address · Acme ID')
    const logo = /<img src="([^"]+)" alt="Acme ID"/.exec(mail.html)?.[1]
    expect(logo).toMatch(new RegExp(`^${TEST_ISSUER}/static/brand-logo\\?v=[A-Za-z0-9_-]{12}$`))
    expect((await t.app.inject(logo!.slice(TEST_ISSUER.length))).statusCode).toBe(200)
    expect(mail.html).toMatch(/<a href="[^"]+\/verify-email[^"]*" style="color:#1f6f43">/)
    expect(mail.html).toContain('border-top:4px solid #1f6f43')
    expect(mail.text).not.toContain('brand-logo')
  })
})

describe('without brand settings', () => {
  let plain: TestContext
  beforeAll(async () => {
    plain = await buildTestApp({}, t.testDb)
  })
  afterAll(() => plain?.close())

  it('shows the name alone, has no logo route, and keeps the default accent', async () => {
    const home = await plain.app.inject('/')
    expect(home.body).not.toContain('brand-logo')
    expect(home.body).toContain('<a class="brand" href="/">Gatehouse</a>')
    expect((await plain.app.inject('/static/brand-logo')).statusCode).toBe(404)
    expect((await plain.app.inject('/static/app.css')).body.trimEnd().split('\n').at(-1)).toBe(':root { --accent: #0969da; }')
    const s = await loggedInUser(plain.app)
    const mail = plain.mailbox.last(s.email)
    expect(mail.html).not.toContain('<img')
    expect(mail.html).toContain('<p style="font-size:1.25rem;font-weight:bold;color:#0969da">Gatehouse</p>')
  })
})
