import { sha256Hex } from '../../../src/lib/crypto.js'
import { describe, expect, it } from 'vitest'
import { generateAccessToken } from '../../../src/lib/tokens.js'
import { REVOCATION_CHANNEL } from '@gatehouse/verifier/shared'
import { TEST_ISSUER, type TestClient, basic, createClient, exchange, expectOAuthError, obtainCode, tokenRow } from './helpers.js'
import { tokenEndpointTestFile } from '../../helpers/oauth-set-up.js'

const { t, user: s, client } = tokenEndpointTestFile()

async function issueToken(c: TestClient): Promise<string> {
  const res = await exchange(t.app, c, { code: await obtainCode(s, c) })
  return res.json().access_token
}

function revoke(c: TestClient, token: string | undefined, headers: Record<string, string> = {}, withSecret = true) {
  const body = new URLSearchParams({
    client_id: c.clientId,
    ...(withSecret ? { client_secret: c.clientSecret } : {}),
    ...(token !== undefined ? { token } : {}),
  })
  return t.app.inject({
    method: 'POST',
    url: '/oauth/revoke',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: body.toString(),
  })
}

describe('POST /oauth/revoke (RFC 7009)', () => {
  it("revokes the client's own token at once and announces it", async () => {
    const notices: string[] = []
    const stop = await t.testDb.handle.listen(REVOCATION_CHANNEL, (p) => notices.push(p))
    try {
      const token = await issueToken(client)
      const res = await revoke(client, token)
      expect(res.statusCode).toBe(200)
      expect(res.body).toBe('')
      expect(res.headers['cache-control']).toBe('no-store')
      expect((await tokenRow(t.db, token))?.revoked_at).toEqual(t.clock())
      await expect.poll(() => notices).toContain(sha256Hex(token))
    } finally {
      await stop()
    }
  })

  it('answers 200 for unknown, malformed and already revoked tokens', async () => {
    expect((await revoke(client, generateAccessToken())).statusCode).toBe(200)
    expect((await revoke(client, 'not-a-token')).statusCode).toBe(200)
    const token = await issueToken(client)
    expect((await revoke(client, token)).statusCode).toBe(200)
    const firstRevocation = (await tokenRow(t.db, token))?.revoked_at
    t.clock.advance(1000)
    expect((await revoke(client, token)).statusCode).toBe(200)
    expect((await tokenRow(t.db, token))?.revoked_at).toEqual(firstRevocation)
  })

  it("refuses another application's token and leaves it active", async () => {
    const other = await createClient(t.db)
    const token = await issueToken(other)
    const res = await revoke(client, token)
    expectOAuthError(res, 'unauthorized_client')
    expect((await tokenRow(t.db, token))?.revoked_at).toBeNull()
  })

  it('requires client authentication, by parameters or Basic but not both', async () => {
    const token = await issueToken(client)
    expectOAuthError(await revoke(client, token, {}, false), 'invalid_client', 401)
    expectOAuthError(await revoke({ ...client, clientSecret: 'gcs_wrong' }, token), 'invalid_client', 401)
    expectOAuthError(await revoke(client, token, { authorization: basic(client.clientId, client.clientSecret) }), 'invalid_request')
    expect((await tokenRow(t.db, token))?.revoked_at).toBeNull()
    const viaBasic = await t.app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(client.clientId, client.clientSecret) },
      payload: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
    })
    expect(viaBasic.statusCode).toBe(200)
    expect((await tokenRow(t.db, token))?.revoked_at).not.toBeNull()
  })

  it('requires the token parameter and Content-Length', async () => {
    expectOAuthError(await revoke(client, undefined), 'invalid_request')
    const noLength = await t.app.inject({ method: 'POST', url: `/oauth/revoke?client_id=${client.clientId}` })
    expect(noLength.statusCode).toBe(411)
  })

  it('makes the revoked token unusable for a replayed exchange too', async () => {
    const code = await obtainCode(s, client)
    const token = (await exchange(t.app, client, { code })).json().access_token
    await revoke(client, token)
    expectOAuthError(await exchange(t.app, client, { code }), 'invalid_grant')
  })
})

describe('GET /.well-known/oauth-authorization-server (RFC 8414)', () => {
  it('describes the endpoints, scopes and methods', async () => {
    const res = await t.app.inject('/.well-known/oauth-authorization-server')
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      issuer: TEST_ISSUER,
      authorization_endpoint: `${TEST_ISSUER}/oauth/authorize`,
      token_endpoint: `${TEST_ISSUER}/oauth/token`,
      revocation_endpoint: `${TEST_ISSUER}/oauth/revoke`,
      introspection_endpoint: `${TEST_ISSUER}/oauth/introspect`,
      scopes_supported: ['openid', 'email', 'profile', 'read', 'write', 'write_members', 'write_teams', 'write_events', 'write_users'],
      response_types_supported: ['code', 'token', 'id_token', 'id_token token'],
      response_modes_supported: ['query', 'fragment', 'form_post'],
      grant_types_supported: [
        'authorization_code',
        'client_credentials',
        'refresh_token',
        'urn:ietf:params:oauth:grant-type:device_code',
        'implicit',
      ],
      device_authorization_endpoint: `${TEST_ISSUER}/oauth/device_authorization`,
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      code_challenge_methods_supported: ['S256', 'plain'],
      authorization_response_iss_parameter_supported: true,
      dpop_signing_alg_values_supported: [
        'ES256',
        'ES384',
        'ES512',
        'EdDSA',
        'Ed25519',
        'PS256',
        'PS384',
        'PS512',
        'RS256',
        'RS384',
        'RS512',
      ],
      pushed_authorization_request_endpoint: `${TEST_ISSUER}/oauth/par`,
      require_pushed_authorization_requests: false,
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
    })
  })
})
