import { type Verifier, createVerifier } from '@gatehouse/verifier'
import { LIVE_TOKEN_VIEW, LIVE_TOKEN_VIEW_V1, LIVE_TOKEN_VIEW_V2, sha256Hex } from '@gatehouse/verifier/shared'
import * as client from 'openid-client'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { regenerateSecret } from '../../../src/applications/applications.js'
import { suspendApplication } from '../../../src/operator/moderation.js'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { type ApplicationFixture, basicAuth, createAccessToken, createApplication, createUser } from '../../helpers/factories.js'
import { listenOnLoopback } from '../../helpers/loopback.js'
import { until } from '../../helpers/oauth-load.js'
import { NOTICE_WAIT_MS } from '../../helpers/propagation.js'
import { introspect, operator } from '../operator/helpers.js'

/*
 * The client credentials grant (RFC 6749 §4.4, docs/oauth-endpoints.md "Machine clients"), with
 * openid-client's clientCredentialsGrant, unmodified, against a listening server: a machine
 * application an operator enabled gets an opaque token for itself, with no user. Introspection,
 * token info and both verifier modes say so (`sub` is the client, RFC 9068 §2.2); UserInfo has
 * nobody to describe; revocation reaches it as it reaches users' tokens; everything else is
 * refused with RFC 6749 §5.2's codes.
 */

let t: TestContext
let base: string
let machine: ApplicationFixture
let rs: ApplicationFixture
let databaseVerifier: Verifier
let introspectionVerifier: Verifier

beforeAll(async () => {
  const listening = await listenOnLoopback(buildTestApp)
  t = listening.t
  base = listening.baseUrl
  machine = await createApplication(t.db, { name: 'Nightly sync', kind: 'machine', clientCredentialsScopes: ['read', 'write_teams'] })
  rs = await createApplication(t.db, { name: 'Team API', resourceServer: true })
  databaseVerifier = createVerifier({
    mode: 'database',
    database: t.deps.bus.verifierDatabase(t.deps.database),
    now: () => t.clock().getTime(),
  })
  introspectionVerifier = createVerifier({
    mode: 'introspection',
    introspectionUrl: `${base}/oauth/introspect`,
    revocationStreamUrl: `${base}/oauth/revocations/stream`,
    clientId: rs.clientId,
    clientSecret: rs.clientSecret,
    cacheTtlSeconds: 60,
    now: () => t.clock().getTime(),
  })
  await Promise.all([databaseVerifier.ready(), introspectionVerifier.ready()])
})
afterAll(async () => {
  await introspectionVerifier?.close()
  await databaseVerifier?.close()
  await t?.close()
})

function machineClient(app: Pick<ApplicationFixture, 'clientId' | 'clientSecret'> = machine): Promise<client.Configuration> {
  return client.discovery(new URL(base), app.clientId, app.clientSecret, undefined, { execute: [client.allowInsecureRequests] })
}

/** POST /oauth/token as a hand-written client would, to read the refusals exactly. */
function tokenRequest(params: Record<string, string>, app: Pick<ApplicationFixture, 'clientId' | 'clientSecret'> = machine) {
  return t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { authorization: basicAuth(app.clientId, app.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'client_credentials', ...params }).toString(),
  })
}

async function machineToken(scope?: string): Promise<string> {
  const res = await tokenRequest(scope === undefined ? {} : { scope })
  expect(res.statusCode, res.body).toBe(200)
  return res.json<{ access_token: string }>().access_token
}

describe('openid-client, unmodified', () => {
  it('finds client_credentials in the metadata and gets a token with every granted scope by default', async () => {
    const config = await machineClient()
    expect(config.serverMetadata().grant_types_supported).toEqual(expect.arrayContaining(['authorization_code', 'client_credentials']))
    const tokens = await client.clientCredentialsGrant(config)
    expect(tokens.access_token).toMatch(/^gat_/)
    expect(tokens.token_type).toBe('bearer')
    expect(tokens.scope).toBe('read write_teams')
    // RFC 6749 §4.4.3: no refresh token.
    expect(tokens.refresh_token).toBeUndefined()
    expect(tokens.id_token).toBeUndefined()

    const row = await t.db
      .selectFrom('access_tokens')
      .selectAll()
      .where('token_hash', '=', sha256Hex(tokens.access_token))
      .executeTakeFirstOrThrow()
    expect(row).toMatchObject({ user_id: null, application_id: machine.id, authorization_code_id: null, scopes: ['read', 'write_teams'] })
  })

  it('asks for fewer scopes than were granted', async () => {
    const tokens = await client.clientCredentialsGrant(await machineClient(), { scope: 'read' })
    expect(tokens.scope).toBe('read')
  })

  it('is refused a scope beyond the granted ones with invalid_scope', async () => {
    const refused = await client.clientCredentialsGrant(await machineClient(), { scope: 'read write' }).catch((err: unknown) => err)
    expect(refused).toBeInstanceOf(client.ResponseBodyError)
    expect(refused).toMatchObject({ error: 'invalid_scope', status: 400 })
  })
})

describe('what the token says: no user', () => {
  it('introspection answers with the client as sub and no username, to a resource server and to the client itself', async () => {
    const token = await machineToken('read')
    const iat = expect.any(Number)
    const expected = { active: true, scope: 'read', client_id: machine.clientId, sub: machine.clientId, token_type: 'Bearer', iat }
    const asResourceServer = await introspect(t, rs, token)
    expect(asResourceServer.json()).toStrictEqual(expected)
    expect((await introspect(t, machine, token)).json()).toStrictEqual(expected)
  })

  it('token info has no resource owner', async () => {
    const token = await machineToken('read')
    const res = await t.app.inject({ method: 'GET', url: '/oauth/token/info', headers: { authorization: `Bearer ${token}` } })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ resource_owner_id: null, scope: ['read'], application: { uid: machine.clientId } })
  })

  it('both verifier modes hand over kind client, no user id, the client as subject', async () => {
    const token = await machineToken('read write_teams')
    for (const verifier of [databaseVerifier, introspectionVerifier]) {
      const result = await verifier.verify(`Bearer ${token}`, 'write_teams')
      expect(result.ok).toBe(true)
      if (!result.ok) continue
      expect(result.token).toMatchObject({
        kind: 'client',
        userId: null,
        subject: machine.clientId,
        clientId: machine.clientId,
        username: null,
        scopes: ['read', 'write_teams'],
      })
    }
  })

  it("a user's token stays kind user, its subject the user", async () => {
    const user = await createUser(t.db)
    const web = await createApplication(t.db, { ownerId: user.id })
    const { token } = await createAccessToken(t.db, { userId: user.id, applicationId: web.id })
    const result = await databaseVerifier.verify(`Bearer ${token}`)
    expect(result.ok && result.token).toMatchObject({ kind: 'user', userId: user.id, subject: user.id })
    expect((await introspect(t, rs, token)).json()).toMatchObject({ sub: user.id })
  })

  it('UserInfo has nobody to describe: 403 insufficient_scope', async () => {
    const token = await machineToken()
    const res = await t.app.inject({ method: 'GET', url: '/oauth/userinfo', headers: { authorization: `Bearer ${token}` } })
    expect(res.statusCode).toBe(403)
    expect(res.headers['www-authenticate']).toMatch(/insufficient_scope/)
  })

  it('the live view of the first verifiers (_v1) leaves machine tokens out; _v2 and _v3 hold them', async () => {
    const digest = sha256Hex(await machineToken())
    const inView = async (view: string) =>
      (await sql.raw<{ n: number }>(`select count(*)::int as n from ${view} where token_hash = '${digest}'`).execute(t.db)).rows[0]!.n
    expect(await inView(LIVE_TOKEN_VIEW_V1)).toBe(0)
    expect(await inView(LIVE_TOKEN_VIEW_V2)).toBe(1)
    expect(await inView(LIVE_TOKEN_VIEW)).toBe(1)
  })
})

describe('refusals', () => {
  it('a machine application whose grant an operator did not enable: unauthorized_client', async () => {
    const idle = await createApplication(t.db, { kind: 'machine' })
    const res = await tokenRequest({}, idle)
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ error: 'unauthorized_client' })
  })

  it('a web application, even with scopes stored for the grant: unauthorized_client', async () => {
    const web = await createApplication(t.db, { clientCredentialsScopes: ['read'] })
    const res = await tokenRequest({}, web)
    expect(res.json()).toMatchObject({ error: 'unauthorized_client' })
  })

  it('a public application, identified by client_id alone, may not use it: unauthorized_client (RFC 6749 4.4, 5.2)', async () => {
    const native = await createApplication(t.db, { kind: 'native' })
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: native.clientId }).toString(),
    })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ error: 'unauthorized_client' })
    const live = await t.db.selectFrom('access_tokens').select('token_hash').where('application_id', '=', native.id).execute()
    expect(live).toEqual([])
  })

  it('wrong credentials: invalid_client', async () => {
    const res = await tokenRequest({}, { clientId: machine.clientId, clientSecret: 'not-the-secret' })
    expect(res.statusCode).toBe(401)
    expect(res.json()).toMatchObject({ error: 'invalid_client' })
  })

  it('unknown or malformed scopes: invalid_scope', async () => {
    for (const scope of ['frobnicate', 'openid', 'read "x"']) {
      const res = await tokenRequest({ scope })
      expect(res.statusCode, scope).toBe(400)
      expect(res.json(), scope).toMatchObject({ error: 'invalid_scope' })
    }
  })

  it('a suspended application: invalid_client, and its machine tokens are revoked', async () => {
    const app = await createApplication(t.db, { kind: 'machine', clientCredentialsScopes: ['read'] })
    const res = await tokenRequest({}, app)
    const token = res.json<{ access_token: string }>().access_token
    await suspendApplication(operator(t), app.id, t.clock())
    expect((await tokenRequest({}, app)).json()).toMatchObject({ error: 'invalid_client' })
    expect((await introspect(t, rs, token)).json()).toEqual({ active: false })
  })

  it('a machine never sends users to /oauth/authorize: an error page, no redirect', async () => {
    const url = `/oauth/authorize?response_type=code&client_id=${machine.clientId}&redirect_uri=${encodeURIComponent('https://app.example.com/callback')}&scope=read`
    const res = await t.app.inject({ method: 'GET', url })
    expect(res.statusCode).toBe(400)
    expect(res.headers.location).toBeUndefined()
    expect(res.body).toContain('acts for no user')
  })

  it('another grant type: unsupported_grant_type, naming both', async () => {
    const res = await tokenRequest({ grant_type: 'password' })
    expect(res.json()).toMatchObject({ error: 'unsupported_grant_type' })
    expect(res.json<{ error_description: string }>().error_description).toContain('client_credentials')
  })
})

describe('revocation, as for users’ tokens', () => {
  it('RFC 7009 by its client, heard by both verifiers', async () => {
    const config = await machineClient()
    const { access_token: token } = await client.clientCredentialsGrant(config, { scope: 'read' })
    for (const verifier of [databaseVerifier, introspectionVerifier]) expect((await verifier.verify(`Bearer ${token}`)).ok).toBe(true)
    await client.tokenRevocation(config, token)
    await until(
      () => [databaseVerifier, introspectionVerifier].every((v) => v.verifyCached(`Bearer ${token}`)?.ok !== true),
      NOTICE_WAIT_MS,
      'both verifiers drop the revoked machine token',
    )
    for (const verifier of [databaseVerifier, introspectionVerifier]) expect((await verifier.verify(`Bearer ${token}`)).ok).toBe(false)
    expect((await introspect(t, rs, token)).json()).toEqual({ active: false })
  })

  it("a regenerated secret ends the machine's tokens, which were issued on the old one", async () => {
    const owner = await createUser(t.db)
    const app = await createApplication(t.db, { ownerId: owner.id, kind: 'machine', clientCredentialsScopes: ['read'] })
    const token = (await tokenRequest({}, app)).json<{ access_token: string }>().access_token
    expect((await databaseVerifier.verify(`Bearer ${token}`)).ok).toBe(true)
    const regenerated = await regenerateSecret(t.db, t.deps.bus, app.id, owner.id, t.clock(), { record: async () => {} })
    expect(regenerated).toBeDefined()
    await until(() => databaseVerifier.verifyCached(`Bearer ${token}`)?.ok !== true, NOTICE_WAIT_MS, 'the verifier drops it')
    expect((await introspect(t, rs, token)).json()).toEqual({ active: false })
    const fresh = await tokenRequest({}, { clientId: app.clientId, clientSecret: regenerated!.clientSecret })
    expect(fresh.statusCode).toBe(200)
  })

  it('MAX_TOKENS_PER_GRANT bounds the live machine tokens of the application, the oldest going first', async () => {
    const app = await createApplication(t.db, { kind: 'machine', clientCredentialsScopes: ['read'] })
    const limit = t.config.quotas.tokensPerGrant
    const tokens: string[] = []
    for (let i = 0; i <= limit; i++) {
      t.clock.advance(1000)
      tokens.push((await tokenRequest({}, app)).json<{ access_token: string }>().access_token)
    }
    await t.deps.tokenQuota.settled()
    const live = await t.db
      .selectFrom('access_tokens')
      .select('token_hash')
      .where('application_id', '=', app.id)
      .where('revoked_at', 'is', null)
      .execute()
    expect(live).toHaveLength(limit)
    expect((await introspect(t, rs, tokens[0]!)).json()).toEqual({ active: false })
    expect((await introspect(t, rs, tokens[limit]!)).json()).toMatchObject({ active: true })
  })
})
