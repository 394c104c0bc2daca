import { afterAll, beforeAll, expect, it } from 'vitest'
import { revoke } from '../../src/revocation/revoke.js'
import type { TestContext } from '../helpers/app.js'
import { untilBlockedOnLock } from '../helpers/lock-wait.js'
import {
  authorizeUrl,
  buildOAuthTestApp,
  consentFields,
  createClient,
  exchange,
  locationParams,
  loggedInUser,
} from '../integration/oauth/helpers.js'

/*
 * A code exchange racing an application's suspension (README "Operating Gatehouse"): the
 * suspension deletes the application's pending codes in the transaction that revokes its
 * tokens, so an exchange that arrives meanwhile waits on the code's row lock and then finds
 * the code gone; the hot path needs no lock of its own. Without the deletion it would insert a
 * token after the revocation, alive on a suspended application. PGlite has one connection: a
 * server-only test.
 */
let t: TestContext
beforeAll(async () => {
  t = await buildOAuthTestApp()
})
afterAll(async () => {
  await t.close()
})

it('an exchange that arrives during a suspension waits for it and gets invalid_client, leaving no live token', async () => {
  const client = await createClient(t.db)
  const s = await loggedInUser(t.app)
  const page = await s.get(authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: client.redirectUri }))
  const approved = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
  const code = locationParams(approved).get('code')!

  const { request: pending } = await t.db.transaction().execute(async (trx) => {
    // What suspendApplication does, held open until the exchange is blocked on the row.
    await trx.selectFrom('applications').select('id').where('id', '=', client.id).forUpdate().execute()
    await trx.updateTable('applications').set({ suspended_at: new Date() }).where('id', '=', client.id).execute()
    await revoke({ db: trx, bus: t.deps.bus }, { kind: 'application-suspended', applicationId: client.id }, new Date())
    const request = exchange(t.app, client, { code })
    await untilBlockedOnLock(t.db)
    return { request }
  })
  const res = await pending
  expect(res.statusCode).toBe(401)
  expect(res.json()).toMatchObject({ error: 'invalid_client' })
  const live = await t.db
    .selectFrom('access_tokens')
    .select('id')
    .where('application_id', '=', client.id)
    .where('revoked_at', 'is', null)
    .execute()
  expect(live).toEqual([])
})
