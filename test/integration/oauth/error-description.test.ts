import { beforeAll, describe, expect, it } from 'vitest'
import { RFC_6749_DESCRIPTION, authorizeUrl, basic, expectOAuthError, locationParams, obtainCode } from './helpers.js'
import { tokenEndpointTestFile } from '../../helpers/oauth-set-up.js'

/*
 * error_description may hold only %x20-21 / %x23-5B / %x5D-7E (RFC 6749 4.1.2.1, 4.2.2.1, 5.2).
 * Before, `scope=x"\` came back as `Unknown scope "x"\"`, and a parameter named `a"\` was
 * quoted into the JSON description. Descriptions now name parameters, not their values, and
 * the OAuthError family replaces whatever else would fall outside the set.
 */

const {
  t,
  user: s,
  client,
} = tokenEndpointTestFile({
  client: { redirectUris: ['https://client.example/cb'], allowImplicit: true },
})
beforeAll(async () => {
  // A grant for this client makes its redirect URI a trusted target (RFC 9700 4.11.2), so
  // errors are redirected to it rather than shown on a page.
  await obtainCode(s, client)
})

const form = { 'content-type': 'application/x-www-form-urlencoded' }

describe('JSON endpoints', () => {
  it.each([
    ['/oauth/token', 'a%22%5C=%00&grant_type=authorization_code'],
    ['/oauth/token', 'grant_type=authorization_code&code=x&client_id=%22%5C%00&client_secret=s'],
    ['/oauth/introspect', 'token=x&a%22%5C%E4%B8%80=%01'],
    ['/oauth/revoke', 'token=x&%22=%00'],
  ])('%s with %s', async (url, payload) => {
    const headers = url === '/oauth/token' ? form : { ...form, authorization: basic(client.clientId, client.clientSecret) }
    const res = await t.app.inject({ method: 'POST', url, headers, payload })
    expectOAuthError(res, 'invalid_request')
    expect(res.json().error_description).toMatch(RFC_6749_DESCRIPTION)
    expect(res.json().error_description).not.toMatch(/["\\]/)
  })
})

describe('redirects to the client', () => {
  const request = (mode: 'query' | 'fragment', extra: Record<string, string>) =>
    authorizeUrl({
      client_id: client.clientId,
      redirect_uri: client.redirectUri,
      response_type: mode === 'query' ? 'code' : 'token',
      state: 's"\\1',
      ...extra,
    })

  it.each([
    ['query', { scope: 'x"\\' }, 'invalid_scope'],
    ['fragment', { scope: 'x"\\' }, 'invalid_scope'],
    ['query', { scope: 'read lecture-é' }, 'invalid_scope'],
    ['query', { 'a"\\': '\u0000' }, 'invalid_request'],
    ['fragment', { 'a"\\': '\u0000' }, 'invalid_request'],
  ] as const)('in the %s: %j', async (mode, extra, error) => {
    const res = await s.get(request(mode, extra))
    expect(res.statusCode, res.body.slice(0, 300)).toBe(302)
    const p = locationParams(res, mode)
    expect(p.get('error')).toBe(error)
    expect(p.get('error_description')).toMatch(RFC_6749_DESCRIPTION)
    // state is the client's own value and is echoed unchanged (RFC 6749 4.1.2.1).
    expect(p.get('state')).toBe('s"\\1')
  })

  it('still tells the client which scope is unknown when it is well-formed', async () => {
    const res = await s.get(request('query', { scope: 'read admin' }))
    expect(locationParams(res).get('error_description')).toBe('Unknown scope: admin')
  })
})
