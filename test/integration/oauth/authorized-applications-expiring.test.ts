import { describe, expect, it } from 'vitest'
import { oauthTestFile } from '../../helpers/oauth-set-up.js'
import { expectAccessiblePage } from '../../helpers/console.js'
import { createClient, loggedInUser, obtainCode } from './helpers.js'

/*
 * "Authorized Applications" says when a grant's tokens expire: its live refresh-token families
 * (not revoked, not past their absolute end) give the access-token lifetime and the last day the
 * tokens renew (docs/expiring-tokens.md). The families are inserted here as the refresh grant
 * would make them; the page reads them in the statement that lists the grants.
 */

const { t } = oauthTestFile()

const DAY = 86_400_000

/** The cell of the row that names `name`, up to the next row. */
function rowOf(html: string, name: string): string {
  const start = html.indexOf(`<strong>${name}</strong>`)
  expect(start, name).toBeGreaterThan(-1)
  const end = html.indexOf('</tr>', start)
  return html.slice(start, end)
}

describe('Authorized Applications with expiring tokens', () => {
  it('says how long access lasts and until when it renews, from the live families only', async () => {
    const s = await loggedInUser(t.app)
    const user = await t.db.selectFrom('users').select('id').where('email', '=', s.email).executeTakeFirstOrThrow()
    const expiring = await createClient(t.db, { name: 'Hourly Sync' })
    const lapsed = await createClient(t.db, { name: 'Lapsed Sync' })
    const forever = await createClient(t.db, { name: 'Forever Sync' })
    for (const app of [expiring, lapsed, forever]) await obtainCode(s, app, { scope: 'read' })

    const now = t.clock().getTime()
    const family = (applicationId: string, f: { accessTtl: number; expiresAt: number; revoked?: boolean }) => ({
      application_id: applicationId,
      user_id: user.id,
      scopes: ['read'],
      access_token_ttl_seconds: f.accessTtl,
      refresh_token_ttl_seconds: 30 * 86_400,
      created_at: new Date(now - DAY),
      expires_at: new Date(f.expiresAt),
      revoked_at: f.revoked ? new Date(now) : null,
    })
    await t.db
      .insertInto('refresh_token_families')
      .values([
        family(expiring.id, { accessTtl: 3600, expiresAt: now + 200 * DAY }),
        family(expiring.id, { accessTtl: 8 * 3600, expiresAt: now + 300 * DAY }),
        // Neither a revoked family nor one past its end says anything.
        family(expiring.id, { accessTtl: 60, expiresAt: now + 400 * DAY, revoked: true }),
        family(lapsed.id, { accessTtl: 3600, expiresAt: now - 1000 }),
        family(lapsed.id, { accessTtl: 3600, expiresAt: now + 10 * DAY, revoked: true }),
      ])
      .execute()

    const page = await s.get('/authorized-applications')
    expect(page.statusCode).toBe(200)
    expectAccessiblePage(page.body)
    const until = new Date(now + 300 * DAY).toISOString()
    expect(rowOf(page.body, 'Hourly Sync')).toContain(
      `Access tokens expire after 1 hour and are renewed until <time datetime="${until}">${until.slice(0, 10)}</time> at the latest`,
    )
    expect(rowOf(page.body, 'Lapsed Sync')).not.toContain('expiring-grant')
    expect(rowOf(page.body, 'Forever Sync')).not.toContain('expiring-grant')

    // Another user's families are not this user's.
    const other = await loggedInUser(t.app)
    await obtainCode(other, expiring, { scope: 'read' })
    expect(rowOf((await other.get('/authorized-applications')).body, 'Hourly Sync')).not.toContain('expiring-grant')

    // Past the families' end (by the injected clock), the grant no longer says its tokens renew.
    t.clock.advance(DAY)
    await t.db
      .updateTable('refresh_token_families')
      .set({ expires_at: new Date(now + DAY) })
      .where('application_id', '=', expiring.id)
      .execute()
    expect(rowOf((await s.get('/authorized-applications')).body, 'Hourly Sync')).not.toContain('expiring-grant')
  })
})
