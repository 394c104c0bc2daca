import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestContext } from '../../helpers/app.js'
import type { BrowserSession } from '../../helpers/browser-session.js'
import {
  CHALLENGE,
  TEST_ISSUER,
  type TestClient,
  authorizeUrl,
  buildOAuthTestApp,
  createClient,
  grantAccess,
  locationParams,
  loggedInUser,
  returnLink,
} from './helpers.js'

let t: TestContext
let s: BrowserSession & { email: string }
let client: TestClient
beforeAll(async () => {
  t = await buildOAuthTestApp()
  s = await loggedInUser(t.app)
  client = await createClient(t.db, { redirectUris: ['https://client.example/cb'], scopes: ['read', 'write_teams'] })
  // The user once granted this client access: its error responses are redirected (RFC 9700 4.11.2).
  await grantAccess(t.db, s.email, client.id)
})
afterAll(async () => {
  await t.close()
})

describe('phase 1: client and redirect URI problems show a page, never redirect (RFC 6749 4.1.2.1)', () => {
  const cases: Array<[string, () => string, RegExp]> = [
    ['missing client_id', () => '/oauth/authorize?response_type=code', /no client_id/],
    ['unknown client_id', () => authorizeUrl({ response_type: 'code', client_id: 'nope' }), /No application/],
    [
      'unregistered redirect_uri',
      () => authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: 'https://evil.example/cb' }),
      /not covered/,
    ],
    [
      'redirect_uri not a subpath',
      () => authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: 'https://client.example/cbevil' }),
      /not covered/,
    ],
    [
      'dot segments in redirect_uri',
      () => authorizeUrl({ response_type: 'code', client_id: client.clientId, redirect_uri: 'https://client.example/cb/%2e%2e/x' }),
      /not covered/,
    ],
    [
      'repeated client_id',
      () => `/oauth/authorize?response_type=code&client_id=${client.clientId}&client_id=${client.clientId}`,
      /repeats client_id/,
    ],
    [
      'repeated redirect_uri',
      () =>
        `/oauth/authorize?response_type=code&client_id=${client.clientId}&redirect_uri=${encodeURIComponent(client.redirectUri)}&redirect_uri=x`,
      /repeats redirect_uri/,
    ],
  ]
  it.each(cases)('%s', async (_name, url, message) => {
    const res = await s.get(url())
    expect(res.statusCode).toBe(400)
    expect(res.headers.location).toBeUndefined()
    expect(res.headers['content-type']).toMatch(/text\/html/)
    expect(res.body).toMatch(message)
  })

  it('needs redirect_uri when several are registered', async () => {
    const multi = await createClient(t.db, { redirectUris: ['https://a.example/cb', 'https://b.example/cb'] })
    const res = await s.get(authorizeUrl({ response_type: 'code', client_id: multi.clientId }))
    expect(res.statusCode).toBe(400)
    expect(res.body).toMatch(/several redirect URIs/)
  })

  it('shows the page before any other check, even for a logged-out browser', async () => {
    const res = await t.app.inject(authorizeUrl({ client_id: client.clientId, redirect_uri: 'https://evil.example/' }))
    expect(res.statusCode).toBe(400)
    expect(res.headers.location).toBeUndefined()
  })
})

describe('phase 2: other errors go back to a client the user trusts with error, error_description, state and iss', () => {
  const base = () => ({ client_id: client.clientId, redirect_uri: client.redirectUri, state: 'st 1/&=' })
  const cases: Array<[string, () => string, string, 'query' | 'fragment']> = [
    ['missing response_type', () => authorizeUrl({ ...base() }), 'invalid_request', 'query'],
    ['unknown response_type', () => authorizeUrl({ ...base(), response_type: 'none' }), 'unsupported_response_type', 'query'],
    // Hybrid types are not offered (OpenID Connect Core 3.3); their errors travel in the fragment.
    ['hybrid response_type', () => authorizeUrl({ ...base(), response_type: 'code id_token' }), 'unsupported_response_type', 'fragment'],
    [
      'id_token for an application without the token flow',
      () => authorizeUrl({ ...base(), response_type: 'id_token' }),
      'unauthorized_client',
      'fragment',
    ],
    [
      'token flow not allowed for this application',
      () => authorizeUrl({ ...base(), response_type: 'token' }),
      'unauthorized_client',
      'fragment',
    ],
    ['unknown scope', () => authorizeUrl({ ...base(), response_type: 'code', scope: 'read admin' }), 'invalid_scope', 'query'],
    [
      'scope not allowed for the application',
      () => authorizeUrl({ ...base(), response_type: 'code', scope: 'write' }),
      'invalid_scope',
      'query',
    ],
    [
      'repeated scope parameter',
      () => `${authorizeUrl({ ...base(), response_type: 'code' })}&scope=read&scope=read`,
      'invalid_request',
      'query',
    ],
    ['repeated response_type', () => `${authorizeUrl({ ...base() })}&response_type=code&response_type=code`, 'invalid_request', 'query'],
    [
      'unknown PKCE method',
      () => authorizeUrl({ ...base(), response_type: 'code', code_challenge: CHALLENGE, code_challenge_method: 'S512' }),
      'invalid_request',
      'query',
    ],
    [
      'malformed S256 challenge',
      () => authorizeUrl({ ...base(), response_type: 'code', code_challenge: 'short', code_challenge_method: 'S256' }),
      'invalid_request',
      'query',
    ],
    [
      'method without challenge',
      () => authorizeUrl({ ...base(), response_type: 'code', code_challenge_method: 'S256' }),
      'invalid_request',
      'query',
    ],
  ]
  it.each(cases)('%s', async (_name, url, error, mode) => {
    const res = await s.get(url())
    expect(res.statusCode).toBe(302)
    const location = String(res.headers.location)
    expect(location.startsWith(`${client.redirectUri}${mode === 'query' ? '?' : '#'}`)).toBe(true)
    const p = locationParams(res, mode)
    expect(p.get('error')).toBe(error)
    expect(p.get('error_description')).toBeTruthy()
    expect(p.get('iss')).toBe(TEST_ISSUER)
    expect(p.get('state')).toBe('st 1/&=')
  })

  it('requires PKCE where the application says so', async () => {
    const strict = await createClient(t.db, { requirePkce: true })
    await grantAccess(t.db, s.email, strict.id)
    const res = await s.get(authorizeUrl({ client_id: strict.clientId, response_type: 'code', state: 'k' }))
    const p = locationParams(res)
    expect(p.get('error')).toBe('invalid_request')
    expect(p.get('error_description')).toMatch(/PKCE/)
    expect(p.get('state')).toBe('k')
  })

  it('keeps the client query when adding the error', async () => {
    const res = await s.get(
      authorizeUrl({ client_id: client.clientId, redirect_uri: 'https://client.example/cb/x?tab=2', response_type: 'nope' }),
    )
    expect(String(res.headers.location)).toMatch(/^https:\/\/client\.example\/cb\/x\?tab=2&error=unsupported_response_type&/)
  })

  it('refuses a redirect_uri whose query pre-sets a response parameter, on the page', async () => {
    const res = await s.get(
      authorizeUrl({ client_id: client.clientId, redirect_uri: 'https://client.example/cb?code=evil', response_type: 'code' }),
    )
    expect(res.statusCode).toBe(400)
    expect(res.headers.location).toBeUndefined()
  })
})

describe('phase 2 errors for a client nobody here vouches for: a page, not a redirect (RFC 9700 4.11.2)', () => {
  /** Gatehouse as an open redirector: a free account registers evil.example and sends a bogus request. */
  let mine: TestClient
  beforeAll(async () => {
    mine = await createClient(t.db, { redirectUris: ['https://evil.example/cb'], allowImplicit: true })
  })

  async function expectReturnPage(res: Awaited<ReturnType<typeof s.get>>, error: string, mode: 'query' | 'fragment' = 'query') {
    expect(res.statusCode).toBe(400)
    expect(res.headers.location).toBeUndefined()
    expect(res.headers['content-type']).toMatch(/text\/html/)
    expect(res.body).toContain('Team Planner')
    const link = returnLink(res.body)
    expect(link?.text).toBe('Return to evil.example')
    const url = new URL(link!.href)
    expect(`${url.origin}${url.pathname}`).toBe('https://evil.example/cb')
    const p = new URLSearchParams(mode === 'query' ? url.search : url.hash.slice(1))
    expect(p.get('error')).toBe(error)
    expect(p.get('error_description')).toBeTruthy()
    expect(p.get('iss')).toBe(TEST_ISSUER)
    expect(p.get('state')).toBe('x')
    return p
  }

  it('logged out, a bogus response_type', async () => {
    const res = await t.app.inject(
      authorizeUrl({ client_id: mine.clientId, redirect_uri: 'https://evil.example/cb', response_type: 'bogus', state: 'x' }),
    )
    await expectReturnPage(res, 'unsupported_response_type')
  })

  it('logged out, prompt=none', async () => {
    const res = await t.app.inject(authorizeUrl({ client_id: mine.clientId, response_type: 'code', prompt: 'none', state: 'x' }))
    await expectReturnPage(res, 'login_required')
  })

  it('logged in without a grant for this client: an unknown scope, and prompt=none', async () => {
    await expectReturnPage(
      await s.get(authorizeUrl({ client_id: mine.clientId, response_type: 'code', scope: 'admin', state: 'x' })),
      'invalid_scope',
    )
    await expectReturnPage(
      await s.get(authorizeUrl({ client_id: mine.clientId, response_type: 'code', prompt: 'none', state: 'x' })),
      'consent_required',
    )
  })

  it('the token flow keeps its error in the fragment of the link', async () => {
    await expectReturnPage(
      await s.get(authorizeUrl({ client_id: mine.clientId, response_type: 'token', scope: 'admin', state: 'x' })),
      'invalid_scope',
      'fragment',
    )
  })

  it('prompt=none for a trusted client while logged out is still a page: logged out, nobody vouches', async () => {
    const res = await t.app.inject(authorizeUrl({ client_id: client.clientId, response_type: 'code', prompt: 'none', state: 'p' }))
    expect(res.statusCode).toBe(400)
    expect(new URL(returnLink(res.body)!.href).searchParams.get('error')).toBe('login_required')
  })
})
