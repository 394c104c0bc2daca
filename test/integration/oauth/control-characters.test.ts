import { describe, expect, it } from 'vitest'
import { basic, expectOAuthError } from './helpers.js'
import { oauthClientTestFile } from '../../helpers/oauth-set-up.js'

/*
 * Every endpoint reads its parameters through one module (src/oauth/params.ts), so a control
 * character is refused with a clear error wherever it is sent: PostgreSQL refuses U+0000 in
 * text, and before that rule an unchecked value reached SQL and came back as a 500.
 */

const { t, client } = oauthClientTestFile({ redirectUris: ['https://client.example/cb'] })

const form = { 'content-type': 'application/x-www-form-urlencoded' }

it('GET /oauth/authorize: a NUL in client_id is an error page, never a redirect or a 500', async () => {
  const res = await t.app.inject({ method: 'GET', url: '/oauth/authorize?response_type=code&client_id=a%00b' })
  expect(res.statusCode).toBe(400)
  expect(res.headers['content-type']).toMatch(/text\/html/)
  expect(res.body).toMatch(/client_id.*control character/)
})

it('POST /oauth/token: a NUL in client_id is invalid_request', async () => {
  const res = await t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: form,
    payload: 'grant_type=authorization_code&code=x&client_id=a%00b&client_secret=s',
  })
  expectOAuthError(res, 'invalid_request')
})

it('POST /oauth/token: Basic credentials that are not UTF-8 are invalid_client', async () => {
  const header = `Basic ${Buffer.from([0x61, 0xff, 0x3a, 0x62]).toString('base64')}`
  const res = await t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { ...form, authorization: header },
    payload: 'grant_type=authorization_code&code=x',
  })
  expectOAuthError(res, 'invalid_client', 401)
})

it('POST /oauth/introspect: a NUL in client_id or token is invalid_request', async () => {
  for (const payload of ['token=x&client_id=a%00b&client_secret=s', `token=a%00b`]) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/introspect',
      headers: { ...form, authorization: basic(client.clientId, client.clientSecret) },
      payload,
    })
    expectOAuthError(res, 'invalid_request')
  }
})

it('POST /oauth/revoke: a NUL in client_id or token is invalid_request', async () => {
  for (const payload of ['token=x&client_id=a%00b&client_secret=s', 'token=a%00b']) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      headers: { ...form, authorization: basic(client.clientId, client.clientSecret) },
      payload,
    })
    expectOAuthError(res, 'invalid_request')
  }
})

describe('HTTP Basic credentials that cannot be read are invalid_client (RFC 6749 2.3.1, 5.2)', () => {
  const b64 = (bytes: Buffer | string) => Buffer.from(bytes).toString('base64')
  const headers: Array<[string, string]> = [
    ['not UTF-8', `Basic ${b64(Buffer.from([0x61, 0xff, 0x3a, 0x62]))}`],
    ['a lone UTF-8 continuation byte in the secret', `Basic ${b64(Buffer.from([0x61, 0x3a, 0x80]))}`],
    ['not base64', 'Basic !!!not-base64!!!'],
    ['base64 with a space inside', 'Basic YTpi YQ=='],
    ['no colon', `Basic ${b64('just-a-client-id')}`],
    ['an empty user', `Basic ${b64(':secret')}`],
    ['a NUL in the user', `Basic ${b64('a\u0000b:secret')}`],
    ['an encoded NUL in the secret', `Basic ${b64('client:se%00cret')}`],
    ['a malformed escape', `Basic ${b64('client:%zz')}`],
    ['nothing after the scheme', 'Basic '],
  ]
  const endpoints: Array<[string, string]> = [
    ['/oauth/token', 'grant_type=authorization_code&code=x'],
    ['/oauth/introspect', 'token=x'],
    ['/oauth/revoke', 'token=x'],
  ]
  for (const [url, payload] of endpoints) {
    it.each(headers)(`${url}: %s`, async (_name, authorization) => {
      const res = await t.app.inject({ method: 'POST', url, headers: { ...form, authorization }, payload })
      expectOAuthError(res, 'invalid_client', 401)
      expect(res.headers['www-authenticate']).toMatch(/^Basic /)
    })
  }
})
