import { describe, expect, it } from 'vitest'
import { basic, createClient, exchange, expectOAuthError, obtainCode, tokenRow } from './helpers.js'
import { tokenEndpointTestFile } from '../../helpers/oauth-set-up.js'

const { t, user: s, client } = tokenEndpointTestFile({ env: { TOKEN_AUTH_FAILURE_LIMIT: '3' } })

const params = (code: string, extra: Record<string, string> = {}) =>
  new URLSearchParams({
    grant_type: 'authorization_code',
    client_id: client.clientId,
    client_secret: client.clientSecret,
    code,
    redirect_uri: client.redirectUri,
    ...extra,
  })

describe('parameter encodings (docs/oauth-endpoints.md, POST /oauth/token)', () => {
  it('answers a form body with {access_token, token_type, scope, created_at}, no-store and no-cache', async () => {
    const code = await obtainCode(s, client, { scope: 'write_teams read' })
    const res = await exchange(t.app, client, { code })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(Object.keys(body).sort()).toEqual(['access_token', 'created_at', 'scope', 'token_type'])
    expect(body).toMatchObject({ token_type: 'Bearer', scope: 'read write_teams', created_at: Math.floor(t.clock().getTime() / 1000) })
    expect(body.access_token).toMatch(/^gat_/)
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.headers.pragma).toBe('no-cache')
    expect(await tokenRow(t.db, body.access_token)).toMatchObject({
      application_id: client.id,
      scopes: ['read', 'write_teams'],
      revoked_at: null,
    })
  })

  it('accepts a JSON body', async () => {
    for (const type of ['application/json', 'application/json; charset=utf-8']) {
      const code = await obtainCode(s, client)
      const res = await t.app.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { 'content-type': type },
        payload: JSON.stringify(Object.fromEntries(params(code))),
      })
      expect(res.statusCode, res.body).toBe(200)
    }
  })

  it("accepts the query string with Content-Length: 0 (the spec's own usage)", async () => {
    const code = await obtainCode(s, client)
    const res = await t.app.inject({ method: 'POST', url: `/oauth/token?${params(code)}`, headers: { 'content-length': '0' } })
    expect(res.statusCode, res.body).toBe(200)
    const typed = await obtainCode(s, client)
    const res2 = await t.app.inject({
      method: 'POST',
      url: `/oauth/token?${params(typed)}`,
      headers: { 'content-length': '0', 'content-type': 'application/x-www-form-urlencoded' },
    })
    expect(res2.statusCode, res2.body).toBe(200)
  })

  it('answers 411 without Content-Length', async () => {
    const code = await obtainCode(s, client)
    const res = await t.app.inject({ method: 'POST', url: `/oauth/token?${params(code)}` })
    expect(res.statusCode).toBe(411)
    expect(res.json().error).toBe('invalid_request')
  })

  it('refuses parameters split between body and query', async () => {
    const code = await obtainCode(s, client)
    const res = await t.app.inject({
      method: 'POST',
      url: `/oauth/token?code=${code}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: params(code).toString(),
    })
    expectOAuthError(res, 'invalid_request')
  })

  it('refuses a repeated parameter', async () => {
    const code = await obtainCode(s, client)
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `${params(code)}&code=${code}`,
    })
    expectOAuthError(res, 'invalid_request')
    expect(res.json().error_description).toMatch(/parameter code was sent more than once/)
  })

  it("never leaks Fastify's error shape: malformed JSON, other content types, non-string values", async () => {
    const bad = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/json' },
      payload: '{"code":',
    })
    expectOAuthError(bad, 'invalid_request')
    expect(bad.json()).not.toHaveProperty('statusCode')
    const xml = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'text/xml' }, payload: '<a/>' })
    expectOAuthError(xml, 'invalid_request')
    const num = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/json' },
      payload: '{"code":1}',
    })
    expectOAuthError(num, 'invalid_request')
  })

  it('supports only authorization_code, and client_credentials for machine applications alone', async () => {
    const res = await exchange(t.app, client, { grant_type: 'password', code: undefined })
    expectOAuthError(res, 'unsupported_grant_type')
    // RFC 6749 §5.2: a grant Gatehouse supports that this (web) client may not use.
    expectOAuthError(await exchange(t.app, client, { grant_type: 'client_credentials', code: undefined }), 'unauthorized_client')
    expectOAuthError(await exchange(t.app, client, { grant_type: undefined, code: 'x' }), 'invalid_request')
    expectOAuthError(await exchange(t.app, client, { code: undefined }), 'invalid_request')
  })
})

describe('client authentication (RFC 6749 2.3.1)', () => {
  it('accepts HTTP Basic', async () => {
    const code = await obtainCode(s, client)
    const res = await exchange(
      t.app,
      client,
      { code, client_id: undefined, client_secret: undefined },
      { authorization: basic(client.clientId, client.clientSecret) },
    )
    expect(res.statusCode, res.body).toBe(200)
  })

  it('refuses Basic and client_secret together', async () => {
    const code = await obtainCode(s, client)
    const res = await exchange(t.app, client, { code }, { authorization: basic(client.clientId, client.clientSecret) })
    expectOAuthError(res, 'invalid_request')
  })

  it('answers a wrong secret with 401 invalid_client, with WWW-Authenticate only for Basic', async () => {
    const other = await createClient(t.db)
    const code = await obtainCode(s, other)
    const body = await exchange(t.app, other, { code, client_secret: 'gcs_wrong' })
    expectOAuthError(body, 'invalid_client', 401)
    expect(body.headers['www-authenticate']).toBeUndefined()
    const viaBasic = await exchange(
      t.app,
      other,
      { code, client_id: undefined, client_secret: undefined },
      { authorization: basic(other.clientId, 'gcs_wrong') },
    )
    expectOAuthError(viaBasic, 'invalid_client', 401)
    expect(viaBasic.headers['www-authenticate']).toMatch(/^Basic /)
    // The code survives failed client authentication.
    expect((await exchange(t.app, other, { code })).statusCode).toBe(200)
  })

  it('answers missing credentials and unknown clients with invalid_client', async () => {
    expectOAuthError(await exchange(t.app, client, { code: 'x', client_id: undefined, client_secret: undefined }), 'invalid_client', 401)
    expectOAuthError(await exchange(t.app, client, { code: 'x', client_secret: undefined }), 'invalid_client', 401)
    expectOAuthError(await exchange(t.app, client, { code: 'x', client_id: 'unknown' }), 'invalid_client', 401)
  })

  it('rate-limits failed authentication per client, never locking out the right secret', async () => {
    const victim = await createClient(t.db)
    const statuses: number[] = []
    for (let i = 0; i < 5; i++) statuses.push((await exchange(t.app, victim, { code: 'x', client_secret: 'gcs_guess' })).statusCode)
    expect(statuses).toEqual([401, 401, 401, 429, 429])
    const limited = await exchange(t.app, victim, { code: 'x', client_secret: 'gcs_guess' })
    expectOAuthError(limited, 'invalid_request', 429)
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0)
    const code = await obtainCode(s, victim)
    expect((await exchange(t.app, victim, { code })).statusCode).toBe(200)
    // Another client is unaffected.
    expectOAuthError(await exchange(t.app, client, { code: 'x', client_secret: 'gcs_guess' }), 'invalid_client', 401)
    t.clock.advance(16 * 60_000)
    expectOAuthError(await exchange(t.app, victim, { code: 'x', client_secret: 'gcs_guess' }), 'invalid_client', 401)
  })
})
