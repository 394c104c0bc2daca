import { afterAll, beforeAll, expect, it } from 'vitest'
import type { TestContext } from '../../helpers/app.js'
import { type TestClient, basic, buildOAuthTestApp, createClient, expectOAuthError } from './helpers.js'

/*
 * Every endpoint reads its parameters through one module (src/oauth/params.ts), so a control
 * character is refused with a clear error wherever it is sent: PostgreSQL refuses U+0000 in
 * text, and before that rule an unchecked value reached SQL and came back as a 500.
 */

let t: TestContext
let client: TestClient
beforeAll(async () => {
  t = await buildOAuthTestApp()
  client = await createClient(t.db, { redirectUris: ['https://client.example/cb'] })
})
afterAll(async () => {
  await t.close()
})

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
