import { expect, it } from 'vitest'
import { suspendApplication } from '../../src/operator/moderation.js'
import { createAccessToken, createUser } from '../helpers/factories.js'
import { stageRaceBehindLock } from '../helpers/lock-wait.js'
import { createClient, exchange, loggedInUser, obtainCode } from '../integration/oauth/helpers.js'
import { oauthTestFile } from '../helpers/oauth-set-up.js'

/*
 * A code exchange racing an application's suspension (docs/operating/admin.md): the
 * suspension deletes the application's pending codes in the transaction that revokes its
 * tokens, so an exchange that arrives meanwhile waits on the code's row lock and then finds
 * the code gone; the hot path needs no lock of its own. Without the deletion it would insert a
 * token after the revocation, alive on a suspended application. PGlite has one connection: a
 * server-only test.
 *
 * The suspension is the operator's own suspendApplication, held open from outside: the test
 * locks one of the application's tokens, which the suspension revokes after deleting the
 * codes, so it waits there with the code's row in hand until the exchange waits behind it.
 */
const { t } = oauthTestFile()

it('an exchange that arrives during a suspension waits for it and gets invalid_client, leaving no live token', async () => {
  const client = await createClient(t.db)
  const s = await loggedInUser(t.app)
  const code = await obtainCode(s, client)
  const held = await createAccessToken(t.db, { userId: (await createUser(t.db)).id, applicationId: client.id })

  const operator = { ...t.revocation, record: async () => {} }
  const { first: suspension, second: request } = await stageRaceBehindLock(
    t.db,
    (trx) => trx.selectFrom('access_tokens').select('token_hash').where('token_hash', '=', held.digest).forUpdate().execute(),
    () => suspendApplication(operator, client.id, t.clock()),
    () => exchange(t.app, client, { code }),
  )
  expect(await suspension).toEqual({ changed: true, revoked: 1 })
  const res = await request
  expect(res.statusCode).toBe(401)
  expect(res.json()).toMatchObject({ error: 'invalid_client' })
  const live = await t.db
    .selectFrom('access_tokens')
    .select('token_hash')
    .where('application_id', '=', client.id)
    .where('revoked_at', 'is', null)
    .execute()
  expect(live).toEqual([])
})
