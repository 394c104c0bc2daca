import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, type TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { applicationForm, createApplicationViaConsole } from '../../helpers/console.js'

/*
 * Form fields and `next` that no person types: control characters (PostgreSQL refuses U+0000
 * in text, so an unchecked one came back as a 500) and a `next` outside printable ASCII (Node
 * refuses it in the Location header: ERR_INVALID_CHAR, a 500). Each is refused as input, on the
 * page, and nothing of it is stored.
 */

let t: TestContext
beforeAll(async () => {
  t = await buildTestApp({ LOGIN_RATE_LIMIT: '10000' })
  const s = browser()
  await s.get('/signup')
  await s.post('/signup', { email: 'known@example.com', password: PASSWORD })
})
afterAll(async () => {
  await t.close()
})

const PASSWORD = 'correct horse battery'

let addresses = 0
function browser(): BrowserSession {
  addresses++
  return new BrowserSession(t.app, `198.51.100.${addresses}`)
}

function expectHtmlRefusal(res: { statusCode: number; headers: Record<string, unknown>; body: string }, status = 400): void {
  expect(res.statusCode, res.body.slice(0, 300)).toBe(status)
  expect(String(res.headers['content-type'])).toMatch(/^text\/html/)
  expect(res.headers.location).toBeUndefined()
}

async function storedRateLimitKeys(): Promise<string[]> {
  return (await t.db.selectFrom('rate_limits').select('key').execute()).map((r) => r.key)
}

describe('next= is followed only when it is a local path of printable ASCII', () => {
  it.each([
    ['non-ASCII', '/一'],
    ['Latin-1', '/caf\u00e9'],
    ['a space', '/applications new'],
    ['a tab', '/applications\tx'],
    ['DEL', '/applications\u007f'],
    ['a lone surrogate', '/x\ud800'],
  ])('POST /login with next containing %s lands on the default page', async (_name, next) => {
    const s = browser()
    await s.get('/login')
    const res = await s.post('/login', { email: 'known@example.com', password: PASSWORD, next })
    expect(res.statusCode, res.body.slice(0, 300)).toBe(303)
    expect(res.headers.location).toBe('/applications')
  })

  it('GET /login does not carry such a next into the form', async () => {
    const res = await browser().get(`/login?next=${encodeURIComponent('/一')}`)
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('name="next" value=""')
  })

  it('still follows an ordinary local path, percent-encoded where needed', async () => {
    const s = browser()
    await s.get('/login')
    const res = await s.post('/login', { email: 'known@example.com', password: PASSWORD, next: '/applications?q=%E4%B8%80' })
    expect(res.headers.location).toBe('/applications?q=%E4%B8%80')
  })
})

describe('log-in and sign-up fields with control characters', () => {
  it.each([
    ['a NUL in the email', { email: 'known\u0000@example.com', password: PASSWORD }],
    ['a NUL in the password', { email: 'known@example.com', password: `${PASSWORD}\u0000` }],
    ['an escape character in the email', { email: 'known@example.com\u001b', password: PASSWORD }],
  ])('POST /login with %s is a 400 page, counted under no stored key', async (_name, fields) => {
    const s = browser()
    await s.get('/login')
    const res = await s.post('/login', fields)
    expectHtmlRefusal(res)
    expect(res.body).toContain('control character')
    expect((await storedRateLimitKeys()).filter((k) => /[\u0000-\u001f]/.test(k))).toEqual([])
  })

  it.each([
    ['a NUL in the email', { email: 'new\u0000@example.com', password: PASSWORD }, 'email'],
    ['a NUL in the password', { email: 'nul-password@example.com', password: `${PASSWORD}\u0000` }, 'password'],
    ['a bell in the password', { email: 'bell-password@example.com', password: `${PASSWORD}\u0007` }, 'password'],
  ])('POST /signup with %s is refused beside the field, and no account is made', async (_name, fields, field) => {
    const s = browser()
    await s.get('/signup')
    const res = await s.post('/signup', fields)
    expectHtmlRefusal(res)
    expect(res.body).toMatch(new RegExp(`id="${field}-error">[^<]*control characters`))
    const users = await t.db.selectFrom('users').select('email').execute()
    expect(users.map((u) => u.email)).toEqual(['known@example.com'])
    expect((await storedRateLimitKeys()).filter((k) => /[\u0000-\u001f]/.test(k))).toEqual([])
  })
})

describe('console application form fields with control characters', () => {
  let s: BrowserSession
  beforeAll(async () => {
    s = await browser().signUpAndLogIn('console-owner@example.com')
  })

  const cases: Array<[string, Parameters<typeof applicationForm>[0], string]> = [
    ['a NUL in the name', { name: 'Planner\u0000' }, 'name'],
    ['a NUL in the description', { description: 'Plans\u0000 games' }, 'description'],
    ['an escape character in the description', { description: 'Plans \u001b[31m games' }, 'description'],
    ['a NUL in a redirect URI', { redirect_uris: 'https://planner.example.com/cb\u0000' }, 'redirect_uris'],
  ]

  it.each(cases)('creating with %s shows the form again with the error; nothing is stored', async (_name, fields, field) => {
    await s.get('/applications/new')
    const res = await s.post('/applications', applicationForm(fields))
    expectHtmlRefusal(res)
    expect(res.body).toMatch(new RegExp(`id="${field}-error">[\\s\\S]*?control characters`))
    expect(await t.db.selectFrom('applications').select('id').execute()).toEqual([])
  })

  it('keeps line breaks and tabs in a description', async () => {
    const created = await createApplicationViaConsole(s, { description: 'Plans games\r\n\tand events' })
    const row = await t.db.selectFrom('applications').select('description').where('id', '=', created.id).executeTakeFirstOrThrow()
    expect(row.description).toBe('Plans games\r\n\tand events')
    await t.db.deleteFrom('applications').execute()
  })

  it.each(cases)('editing with %s shows the form again with the error; nothing changes', async (_name, fields, field) => {
    const created = await createApplicationViaConsole(s, { name: 'Before', description: 'before' })
    await s.get(`/applications/${created.id}/edit`)
    const res = await s.post(`/applications/${created.id}`, applicationForm(fields))
    expectHtmlRefusal(res)
    expect(res.body).toMatch(new RegExp(`id="${field}-error">[\\s\\S]*?control characters`))
    const row = await t.db.selectFrom('applications').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow()
    expect(row).toMatchObject({ name: 'Before', description: 'before', redirect_uris: ['https://planner.example.com/oauth/callback'] })
    await t.db.deleteFrom('applications').execute()
  })
})
