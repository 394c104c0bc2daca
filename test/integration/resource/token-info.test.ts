import { sha256Hex } from '../../../src/lib/crypto.js'
import { describe, expect, it } from 'vitest'
import { generateAccessToken } from '../../../src/lib/tokens.js'
import { revoke } from '../../../src/revocation/revoke.js'
import { basicAuth, createTokenSetup } from '../../helpers/factories.js'
import { testAppFile } from '../../helpers/file-set-up.js'

const { t } = testAppFile()

function tokenInfo(authorization?: string, url = '/oauth/token/info') {
  return t.app.inject({ method: 'GET', url, headers: authorization === undefined ? {} : { authorization } })
}

const INVALID =
  'Bearer realm="gatehouse", error="invalid_token", error_description="The access token is invalid, revoked or malformed", DPoP algs="ES256 ES384 ES512 EdDSA Ed25519 PS256 PS384 PS512 RS256 RS384 RS512"'

describe('GET /oauth/token/info', () => {
  it('describes the bearer token, as Doorkeeper does', async () => {
    const { user, application, token } = await createTokenSetup(t.db, ['read', 'write'])
    const res = await tokenInfo(`Bearer ${token.token}`)
    expect(res.statusCode).toBe(200)
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.json()).toEqual({
      resource_owner_id: user.id,
      scope: ['read', 'write'],
      application: { uid: application.clientId },
      created_at: Math.floor(token.createdAt.getTime() / 1000),
      expires_in: null,
      token_type: 'Bearer',
    })
  })

  it('accepts the scheme in any case (RFC 7235 2.1)', async () => {
    const { token } = await createTokenSetup(t.db)
    expect((await tokenInfo(`bearer ${token.token}`)).statusCode).toBe(200)
    expect((await tokenInfo(`BEARER ${token.token}`)).statusCode).toBe(200)
  })

  it('answers a missing token with a bare challenge (RFC 6750 3.1)', async () => {
    for (const authorization of [undefined, 'Basic dXNlcjpwYXNz', 'Bearer']) {
      const res = await tokenInfo(authorization)
      expect(res.statusCode).toBe(401)
      expect(res.headers['www-authenticate']).toBe(
        'Bearer realm="gatehouse", DPoP algs="ES256 ES384 ES512 EdDSA Ed25519 PS256 PS384 PS512 RS256 RS384 RS512"',
      )
      expect(res.body).toBe('')
    }
  })

  it('answers revoked, unknown and malformed tokens with 401 invalid_token', async () => {
    const { application, token } = await createTokenSetup(t.db)
    expect(
      await revoke(
        t.revocation,
        {
          kind: 'token-of-client',
          clientId: application.clientId,
          secretHash: sha256Hex(application.clientSecret),
          tokenHash: token.digest,
        },
        new Date(),
      ),
    ).toBe(1)
    for (const bad of [token.token, generateAccessToken(), 'garbage', `${token.token}x`, '']) {
      const res = await tokenInfo(`Bearer ${bad}`)
      expect(res.statusCode, bad).toBe(401)
      expect(res.headers['www-authenticate']).toBe(INVALID)
      expect(res.json()).toEqual({ error: 'invalid_token', error_description: 'The access token is invalid, revoked or malformed' })
    }
  })

  it('reads the token from the Authorization header only', async () => {
    const { token } = await createTokenSetup(t.db)
    const res = await tokenInfo(undefined, `/oauth/token/info?access_token=${token.token}`)
    expect(res.statusCode).toBe(401)
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="gatehouse", DPoP algs="ES256 ES384 ES512 EdDSA Ed25519 PS256 PS384 PS512 RS256 RS384 RS512"',
    )
  })

  it('answers from the cache without a query, and stops at once after a revocation here', async () => {
    const { application, token } = await createTokenSetup(t.db)
    expect((await tokenInfo(`Bearer ${token.token}`)).statusCode).toBe(200)
    const before = t.queries.count
    for (let i = 0; i < 5; i++) expect((await tokenInfo(`Bearer ${token.token}`)).statusCode).toBe(200)
    expect(t.queries.count).toBe(before)

    const revoke = await t.app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      headers: {
        authorization: basicAuth(application.clientId, application.clientSecret),
        'content-type': 'application/x-www-form-urlencoded',
      },
      payload: `token=${token.token}`,
    })
    expect(revoke.statusCode).toBe(200)
    expect((await tokenInfo(`Bearer ${token.token}`)).statusCode).toBe(401)
  })
})
