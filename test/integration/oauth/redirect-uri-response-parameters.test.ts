import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestContext } from '../../helpers/app.js'
import type { BrowserSession } from '../../helpers/browser-session.js'
import { type TestClient, authorizeUrl, buildOAuthTestApp, createClient, loggedInUser } from './helpers.js'

/*
 * A redirect_uri whose query pre-sets a response parameter (RFC 6749 4.1.2, 4.2.2, 5.1;
 * RFC 9207 `iss`) under another case or after `;` reached the consent page: the client would
 * then find the attacker's `code` or `state` beside, or instead of, the server's. It is a
 * redirect_uri problem, so the answer is the error page, never a redirect (RFC 6749 4.1.2.1).
 */

let t: TestContext
let s: BrowserSession
let client: TestClient
beforeAll(async () => {
  t = await buildOAuthTestApp()
  s = await loggedInUser(t.app)
  client = await createClient(t.db, { redirectUris: ['https://app.example.com/cb'], allowImplicit: true })
})
afterAll(async () => {
  await t.close()
})

const smuggled = [
  'https://app.example.com/cb?x=1;code=evil',
  'https://app.example.com/cb?State=1',
  'https://app.example.com/cb?CODE=1',
  'https://app.example.com/cb?Access_Token=x',
  'https://app.example.com/cb?x=1;iss=https%3A%2F%2Fevil.example',
  'https://app.example.com/cb?error%5B%5D=access_denied',
  'https://app.example.com/cb?x=1%26state%3Devil',
  'https://app.example.com/cb/deeper?token.type=mac',
  'https://app.example.com/cb?expires_in=1',
]

function expectRedirectUriPage(res: { statusCode: number; headers: Record<string, unknown>; body: string }): void {
  expect(res.statusCode, res.body.slice(0, 300)).toBe(400)
  expect(res.headers.location).toBeUndefined()
  expect(String(res.headers['content-type'])).toMatch(/^text\/html/)
  expect(res.body).toMatch(/redirect_uri is not covered/)
  expect(res.body).not.toContain('name="decision"')
}

describe.each(['code', 'token'])('response_type=%s', (responseType) => {
  it.each(smuggled)('refuses %s on the error page, logged in', async (redirectUri) => {
    const res = await s.get(
      authorizeUrl({ response_type: responseType, client_id: client.clientId, redirect_uri: redirectUri, state: 'ok' }),
    )
    expectRedirectUriPage(res)
  })

  it.each(smuggled)('refuses %s on the error page, logged out', async (redirectUri) => {
    const res = await t.app.inject(authorizeUrl({ response_type: responseType, client_id: client.clientId, redirect_uri: redirectUri }))
    expectRedirectUriPage(res)
  })
})

it('refuses a registered URI that carries one (registered before the rule) when it is sent', async () => {
  const old = await createClient(t.db, { redirectUris: ['https://app.example.com/cb?State=1'] })
  expectRedirectUriPage(await s.get(authorizeUrl({ response_type: 'code', client_id: old.clientId, redirect_uri: old.redirectUri })))
})

it('still accepts a query of the client’s own whose names merely contain a response parameter', async () => {
  const res = await s.get(
    authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: 'https://app.example.com/cb?codes=1;my_state=2' }),
  )
  expect(res.statusCode, res.body.slice(0, 300)).toBe(200)
  expect(res.body).toContain('name="decision"')
})
