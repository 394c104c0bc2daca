import { describe, expect, it } from 'vitest'
import { insertAuditEvent } from '../../../src/repositories/audit-events.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { createApplicationViaConsole, expectAccessiblePage } from '../../helpers/console.js'
import { testAppFile } from '../../helpers/file-set-up.js'

/* GET /account/security-log: a user's own events, newest first, 50 a page (docs/operating/admin.md "Audit log"). */

const { t } = testAppFile()

const userId = async (email: string) =>
  (await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()).id

describe('the Security log page', () => {
  it('sends a visitor who is not logged in to the log-in page, and back', async () => {
    const res = await t.app.inject('/account/security-log')
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe(`/login?next=${encodeURIComponent('/account/security-log')}`)
  })

  it("is in the user menu, and shows the user's own events and no one else's", async () => {
    const alice = await new BrowserSession(t.app, '192.0.2.10').signUpAndLogIn('alice@example.com')
    const bob = await new BrowserSession(t.app, '192.0.2.20').signUpAndLogIn('bob@example.com')
    await createApplicationViaConsole(alice, { name: 'Alice Planner' })
    await createApplicationViaConsole(bob, { name: 'Bob Tracker' })
    const stranger = new BrowserSession(t.app, '192.0.2.30')
    await stranger.get('/login')
    expect((await stranger.post('/login', { email: 'alice@example.com', password: 'wrong password' })).statusCode).toBe(401)

    const page = await alice.get('/account/security-log')
    expect(page.statusCode).toBe(200)
    expect(page.headers['cache-control']).toBe('no-store')
    expectAccessiblePage(page.body)
    expect(page.body).toContain('<a href="/account/security-log">Security log</a>')
    expect(page.body).toContain('Application registered')
    expect(page.body).toContain('Alice Planner')
    expect(page.body).toContain('Logged in')
    expect(page.body).toContain('Account created')
    expect(page.body).toContain('192.0.2.10')
    expect(page.body).toMatch(/Log-in failed<\/td>\s*<td><\/td>\s*<td><code>192\.0\.2\.30<\/code><\/td>\s*<td>Wrong password<\/td>/)
    expect(page.body).not.toContain('Bob Tracker')
    expect(page.body).not.toContain('192.0.2.20')
    expect(page.body).not.toContain('bob@example.com')
    // Newest first.
    expect(page.body.indexOf('Application registered')).toBeLessThan(page.body.indexOf('Account created'))
    expect(page.body).not.toContain('Older events')

    const bobs = await bob.get('/account/security-log')
    expect(bobs.body).toContain('Bob Tracker')
    expect(bobs.body).not.toContain('Alice Planner')
  })

  it('escapes what it shows: an application named <script> is text', async () => {
    const s = await new BrowserSession(t.app).signUpAndLogIn('mallory@example.com')
    await createApplicationViaConsole(s, { name: '<script>alert(1)</script>' })
    const page = await s.get('/account/security-log')
    expect(page.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    expect(page.body).not.toContain('<script>alert(1)')
  })

  it('pages with "Older events", 50 at a time, and says when there are no older events', async () => {
    const s = await new BrowserSession(t.app).signUpAndLogIn('busy@example.com')
    const id = await userId('busy@example.com')
    const start = t.clock().getTime() - 3600_000
    for (let i = 0; i < 60; i++) {
      await insertAuditEvent(t.db, {
        occurredAt: new Date(start + i * 1000),
        event: 'user.login_failed',
        userId: id,
        actorId: null,
        clientId: null,
        applicationName: null,
        clientAddress: '192.0.2.99',
        detail: `attempt ${i}`,
      })
    }
    const first = await s.get('/account/security-log')
    const rowsOf = (html: string) => html.match(/<tr>\s*<td><time/g)?.length ?? 0
    expect(rowsOf(first.body)).toBe(50)
    const older = /<a href="(\/account\/security-log\?before=[^"]+)">Older events<\/a>/.exec(first.body)?.[1]
    expect(older).toBeDefined()
    const second = await s.get(older!.replace(/&amp;/g, '&'))
    expect(second.statusCode).toBe(200)
    // 63 events in all: the sign-up, the verification and the log-in came after the 60 inserted ones.
    expect(rowsOf(second.body)).toBe(13)
    expect(second.body).toContain('attempt 0')
    expect(second.body).not.toContain('Older events')
    expect(second.body).toContain('<a href="/account/security-log">Newest events</a>')

    // A cursor it did not make shows the newest page.
    const junk = await s.get('/account/security-log?before=%3Cscript%3E')
    expect(junk.statusCode).toBe(200)
    expect(rowsOf(junk.body)).toBe(50)
    expect(junk.body).not.toContain('<script>')
  })
})
