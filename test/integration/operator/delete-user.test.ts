import { beforeAll, expect, it } from 'vitest'
import { NotFoundError, deleteUser } from '../../../src/operator/moderation.js'
import type { BrowserSession } from '../../helpers/browser-session.js'
import { createApplicationViaConsole } from '../../helpers/console.js'
import { type TestClient, authorizeUrl, createClient, exchange, expectOAuthError, loggedInUser } from '../oauth/helpers.js'
import { INACTIVE, inactiveOnceNoticed, introspect, isActive, operator, userIdOf } from './helpers.js'
import { readTokenFor, twoInstancesTestFile } from '../../helpers/oauth-set-up.js'

/*
 * An operator deletes an account (docs/operating/admin.md): its applications, grants and
 * tokens go, and every token that dies with it is announced, so another Gatehouse instance's
 * cache drops it once the notice arrives, as a resource server's would.
 */

const { t, b, rs } = twoInstancesTestFile()
let victim: BrowserSession & { email: string }
let victimId: string
let alice: BrowserSession & { email: string }
let othersApp: TestClient
let victimsApp: TestClient

const tokenFor = (s: BrowserSession, client: TestClient) => readTokenFor(t, s, client)

beforeAll(async () => {
  victim = await loggedInUser(t.app)
  victimId = await userIdOf(t, victim.email)
  alice = await loggedInUser(t.app)
  othersApp = await createClient(t.db, { name: 'Shared Calendar', scopes: ['read'] })
  const redirectUri = 'https://doomed.example/cb'
  const created = await createApplicationViaConsole(victim, { name: 'Doomed App', redirect_uris: redirectUri, scopes: ['read'] })
  victimsApp = { id: created.id, clientId: created.clientId, clientSecret: created.clientSecret, redirectUri }
})

it('announces every token that goes with the account, deletes its applications and grants, and nothing of anyone else', async () => {
  const victimsToken = await tokenFor(victim, othersApp)
  const alicesTokenForVictimsApp = await tokenFor(alice, victimsApp)
  const alicesTokenForOthersApp = await tokenFor(alice, othersApp)
  for (const token of [victimsToken, alicesTokenForVictimsApp, alicesTokenForOthersApp]) {
    expect(await isActive(t, rs, token)).toBe(true)
    expect(await isActive(b, rs, token)).toBe(true)
  }

  expect(await deleteUser(operator(t), victimId, t.clock())).toEqual({ email: victim.email, applications: 1 })
  // This process heard it before the call returned; the other instance through LISTEN/NOTIFY.
  for (const token of [victimsToken, alicesTokenForVictimsApp]) expect((await introspect(t, rs, token)).body).toBe(INACTIVE)
  for (const token of [victimsToken, alicesTokenForVictimsApp]) await inactiveOnceNoticed(b, rs, token)
  expect(await isActive(t, rs, alicesTokenForOthersApp)).toBe(true)
  expect(await isActive(b, rs, alicesTokenForOthersApp)).toBe(true)

  // Rows: the account, its application, every grant of hers or to her application, her tokens.
  expect(await t.db.selectFrom('users').select('id').where('id', '=', victimId).execute()).toEqual([])
  expect(await t.db.selectFrom('applications').select('id').where('owner_id', '=', victimId).execute()).toEqual([])
  expect(await t.db.selectFrom('applications').select('id').where('id', '=', victimsApp.id).execute()).toEqual([])
  expect(await t.db.selectFrom('grants').select('id').where('user_id', '=', victimId).execute()).toEqual([])
  expect(await t.db.selectFrom('grants').select('id').where('application_id', '=', victimsApp.id).execute()).toEqual([])
  expect(await t.db.selectFrom('access_tokens').select('token_hash').where('user_id', '=', victimId).execute()).toEqual([])
  expect(await t.db.selectFrom('sessions').select('user_id').where('user_id', '=', victimId).execute()).toEqual([])
  // Alice keeps her grant for the application that is not the victim's.
  const alicesGrants = await t.db
    .selectFrom('grants')
    .innerJoin('users', 'users.id', 'grants.user_id')
    .select('grants.application_id')
    .where('users.email', '=', alice.email)
    .execute()
  expect(alicesGrants).toEqual([{ application_id: othersApp.id }])

  // What is gone answers as gone.
  const session = await victim.get('/applications')
  expect(session.statusCode).toBe(303)
  expect(String(session.headers.location)).toMatch(/^\/login/)
  expectOAuthError(await exchange(t.app, victimsApp, { code: 'gac_none' }), 'invalid_client', 401)
  expect((await introspect(t, victimsApp, alicesTokenForOthersApp)).statusCode).toBe(401)
  const authorize = await alice.get(authorizeUrl({ response_type: 'code', client_id: victimsApp.clientId, scope: 'read' }))
  expect(authorize.statusCode).toBe(400)
  expect(authorize.headers.location).toBeUndefined()
})

it('refuses an unknown account with NotFoundError and changes nothing', async () => {
  await expect(deleteUser(operator(t), victimId, t.clock())).rejects.toBeInstanceOf(NotFoundError)
})
