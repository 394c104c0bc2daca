import { expect, it } from 'vitest'
import { BrowserSession } from '../../helpers/browser-session.js'
import { testAppFile } from '../../helpers/file-set-up.js'

/*
 * MAX_SESSIONS_PER_USER (docs/operating/limits.md): each log-in stores a session row for 14 days, so a
 * stolen password could pile them up; a log-in beyond the cap ends the oldest session.
 */

const PASSWORD = 'correct horse battery'
const { t } = testAppFile({ MAX_SESSIONS_PER_USER: '3', LOGIN_RATE_LIMIT: '1000' })

it('keeps at most MAX_SESSIONS_PER_USER live sessions, ending the oldest at each log-in beyond it', async () => {
  const email = 'many-browsers@example.com'
  const browsers = [await new BrowserSession(t.app, '192.0.2.1').signUpAndLogIn(email, PASSWORD)]
  for (let i = 2; i <= 5; i++) {
    t.clock.advance(60_000)
    const s = new BrowserSession(t.app, `192.0.2.${i}`)
    expect((await s.logIn(email, PASSWORD)).statusCode).toBe(303)
    browsers.push(s)
  }
  const user = await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()
  const live = await t.db.selectFrom('sessions').select('id_hash').where('user_id', '=', user.id).execute()
  expect(live).toHaveLength(3)
  const loggedIn = []
  for (const s of browsers) loggedIn.push((await s.get('/applications')).statusCode === 200)
  expect(loggedIn).toEqual([false, false, true, true, true])
})
