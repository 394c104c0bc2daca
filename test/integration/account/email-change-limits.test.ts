import { expect, it } from 'vitest'
import { BrowserSession } from '../../helpers/browser-session.js'
import { testAppFile } from '../../helpers/file-set-up.js'

/*
 * Email-change requests are bounded (docs/operating/limits.md): each mails the new address and stores
 * a link for a day, so an account may ask EMAIL_CHANGE_LIMIT times an hour, and one new address
 * may be named EMAIL_CHANGE_ADDRESS_LIMIT times an hour whatever the accounts.
 */

const PASSWORD = 'correct horse battery'
const { t } = testAppFile({ EMAIL_CHANGE_LIMIT: '3', EMAIL_CHANGE_ADDRESS_LIMIT: '2', LOGIN_RATE_LIMIT: '1000' })

let n = 0
async function account(): Promise<BrowserSession> {
  const s = await new BrowserSession(t.app, `192.0.2.${++n}`).signUpAndLogIn(`changer-${n}@example.com`, PASSWORD)
  await s.get('/account/email')
  return s
}
const ask = (s: BrowserSession, newEmail: string) => s.post('/account/email', { new_email: newEmail, current_password: PASSWORD })

it('refuses an account its fourth request in an hour with 429, and sends nothing more', async () => {
  const s = await account()
  for (let i = 0; i < 3; i++) expect((await ask(s, `target-${i}@example.com`)).statusCode).toBe(200)
  const refused = await ask(s, 'target-3@example.com')
  expect(refused.statusCode).toBe(429)
  expect(refused.headers['retry-after']).toBeDefined()
  expect(refused.body).toContain('Too many email-change requests')
  expect(t.mailbox.to('target-3@example.com')).toEqual([])
  t.clock.advance(3600_000 + 1000)
  expect((await ask(s, 'target-3@example.com')).statusCode).toBe(200)
})

it('refuses a third request naming the same new address in an hour, from any account', async () => {
  expect((await ask(await account(), 'inbox@example.com')).statusCode).toBe(200)
  expect((await ask(await account(), 'inbox@example.com')).statusCode).toBe(200)
  const refused = await ask(await account(), 'inbox@example.com')
  expect(refused.statusCode).toBe(429)
  expect(t.mailbox.to('inbox@example.com')).toHaveLength(2)
})
