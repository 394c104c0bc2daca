import { afterAll, beforeAll, expect, it } from 'vitest'
import type { TestContext } from '../helpers/app.js'
import { untilBlockedOnLock } from '../helpers/lock-wait.js'
import { authorizeUrl, buildOAuthTestApp, consentFields, createClient, loggedInUser } from '../integration/oauth/helpers.js'

/*
 * "Revoke access" racing a silent authorization (remembered consent): the code is issued
 * under a lock on the grant, so a request that arrives while the revocation's transaction is
 * open waits for it, then finds no grant and asks again. PGlite has one connection, so the
 * request could not even start while the transaction is open: a server-only test.
 */
let t: TestContext
beforeAll(async () => {
  t = await buildOAuthTestApp()
})
afterAll(async () => {
  await t.close()
})

it('a remembered-consent request waits for an in-progress "Revoke access", then shows the consent page', async () => {
  const client = await createClient(t.db)
  const s = await loggedInUser(t.app)
  const url = authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: client.redirectUri, scope: 'read' })
  const page = await s.get(url)
  expect((await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })).statusCode).toBe(303)
  expect((await s.get(url)).statusCode).toBe(302)

  const user = await t.db.selectFrom('users').select('id').where('email', '=', s.email).executeTakeFirstOrThrow()
  const { request: pending } = await t.db.transaction().execute(async (trx) => {
    await trx.deleteFrom('grants').where('user_id', '=', user.id).where('application_id', '=', client.id).execute()
    const request = s.get(url)
    // Hold the transaction open until the request is blocked on the grant's row lock.
    await untilBlockedOnLock(t.db)
    // Wrapped: returning the promise itself would make the commit wait for the request.
    return { request }
  })
  const res = await pending
  expect(res.statusCode).toBe(200)
  expect(res.body).toMatch(/<form method="post" action="\/oauth\/authorize">/)
})
