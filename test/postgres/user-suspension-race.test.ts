import { beforeAll, describe, expect, it } from 'vitest'
import { suspendUser } from '../../src/operator/moderation.js'
import type { BrowserSession } from '../helpers/browser-session.js'
import { createAccessToken, createApplication } from '../helpers/factories.js'
import { stageRaceBehindLock } from '../helpers/lock-wait.js'
import {
  type TestClient,
  authorizeUrl,
  consentFields,
  createClient,
  exchange,
  loggedInUser,
  obtainCode,
} from '../integration/oauth/helpers.js'
import { oauthTestFile } from '../helpers/oauth-set-up.js'

/*
 * A user's suspension racing a request whose session was read before it committed (docs/operating/admin.md "Suspension",
 * finding 5). suspendUser locks the user's row FOR UPDATE, ends the sessions and deletes the
 * pending codes; every statement that issues a code takes the user's row FOR KEY SHARE with
 * `suspended_at is null`, so it waits for the suspension and then issues nothing. Without that
 * it does not wait at all (untilBlockedOnLock then fails: the race was not staged) and its code
 * outlives the suspension. PGlite has one connection: a server-only test.
 *
 * The suspension is the operator's own suspendUser, held open from outside: the test locks one
 * of the user's tokens, which the suspension revokes after deleting the codes, so it waits there
 * with the user's row in hand. The request's session is read meanwhile (the suspension's ending
 * of the sessions is not committed yet), exactly the window of the finding.
 */
const { t } = oauthTestFile()

async function userId(s: { email: string }): Promise<string> {
  return (await t.db.selectFrom('users').select('id').where('email', '=', s.email).executeTakeFirstOrThrow()).id
}

const pendingCodes = (id: string) =>
  t.db.selectFrom('authorization_codes').select('id').where('user_id', '=', id).where('consumed_at', 'is', null).execute()

/** Runs `send` while suspendUser holds the user's row, once it waits behind the suspension. */
async function duringSuspension(s: BrowserSession & { email: string }, send: () => Promise<{ statusCode: number }>) {
  const id = await userId(s)
  const held = await createAccessToken(t.db, { userId: id, applicationId: (await createApplication(t.db)).id })
  const operator = { ...t.revocation, record: async () => {} }
  const { first: suspension, second: request } = await stageRaceBehindLock(
    t.db,
    (trx) => trx.selectFrom('access_tokens').select('token_hash').where('token_hash', '=', held.digest).forUpdate().execute(),
    () => suspendUser(operator, id, t.clock()),
    send,
  )
  expect(await suspension).toEqual({ changed: true })
  return { id, res: await request }
}

describe('a user suspended while a request is under way', () => {
  let client: TestClient
  beforeAll(async () => {
    client = await createClient(t.db)
  })
  const url = () => authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: client.redirectUri, scope: 'read' })

  it('remembered consent waits for the suspension and issues no code', async () => {
    const s = await loggedInUser(t.app)
    const page = await s.get(url())
    expect((await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })).statusCode).toBe(303)
    // Remembered now, with the application in the cache: the one-statement path.
    expect((await s.get(url())).statusCode).toBe(302)

    const { id, res } = await duringSuspension(s, () => s.get(url()))
    expect(res.statusCode).not.toBe(302)
    expect(await pendingCodes(id)).toEqual([])
  })

  it('the consent approval waits for the suspension and issues no code', async () => {
    const s = await loggedInUser(t.app)
    const page = await s.get(url())
    expect(page.statusCode).toBe(200)
    const { id, res } = await duringSuspension(s, () => s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' }))
    expect(res.statusCode).not.toBe(303)
    expect(await pendingCodes(id)).toEqual([])
  })

  it("a suspended user's code that is still found is not exchanged", async () => {
    const s = await loggedInUser(t.app)
    const code = await obtainCode(s, client)
    const id = await userId(s)
    await t.db.updateTable('users').set({ suspended_at: t.clock() }).where('id', '=', id).execute()
    const res = await exchange(t.app, client, { code })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ error: 'invalid_grant' })
    expect(await t.db.selectFrom('access_tokens').select('token_hash').where('user_id', '=', id).execute()).toEqual([])
  })
})
