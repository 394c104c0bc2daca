import { expect, it } from 'vitest'
import { stageRaceBehindLock } from '../helpers/lock-wait.js'
import { authorizeUrl, consentFields, createClient, loggedInUser } from '../integration/oauth/helpers.js'
import { oauthTestFile } from '../helpers/oauth-set-up.js'

/*
 * "Revoke access" racing a silent authorization (remembered consent): the code is issued
 * under a lock on the grant, so a request that arrives while the revocation's transaction is
 * open waits for it, then finds no grant and asks again. PGlite has one connection, so the
 * request could not even start while the transaction is open: a server-only test.
 *
 * The revocation is the real one, the form on Authorized Applications, held open from outside:
 * the test locks the user's pending code, which revoke() deletes after the grant, so it waits
 * there with the grant's row in hand until the authorization waits behind it.
 */
const { t } = oauthTestFile()

it('a remembered-consent request waits for an in-progress "Revoke access", then shows the consent page', async () => {
  const client = await createClient(t.db)
  const s = await loggedInUser(t.app)
  const url = authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: client.redirectUri, scope: 'read' })
  const page = await s.get(url)
  expect((await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })).statusCode).toBe(303)
  expect((await s.get(url)).statusCode).toBe(302)

  const user = await t.db.selectFrom('users').select('id').where('email', '=', s.email).executeTakeFirstOrThrow()
  const grant = await t.db
    .selectFrom('grants')
    .select('id')
    .where('user_id', '=', user.id)
    .where('application_id', '=', client.id)
    .executeTakeFirstOrThrow()
  // The page that carries the form's CSRF token.
  expect((await s.get('/authorized-applications')).statusCode).toBe(200)
  const { first: revocation, second: request } = await stageRaceBehindLock(
    t.db,
    (trx) =>
      trx
        .selectFrom('authorization_codes')
        .select('id')
        .where('user_id', '=', user.id)
        .where('application_id', '=', client.id)
        .where('consumed_at', 'is', null)
        .forUpdate()
        .execute(),
    () => s.post(`/authorized-applications/${grant.id}/revoke`, {}),
    () => s.get(url),
  )
  expect((await revocation).statusCode).toBe(303)
  const res = await request
  expect(res.statusCode).toBe(200)
  expect(res.body).toMatch(/<form method="post" action="\/oauth\/authorize">/)
})
