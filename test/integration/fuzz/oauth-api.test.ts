import fc from 'fast-check'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { type Harness, REDIRECT_URI, VERIFIER, createHarness, knownValues, requests, resourceValues } from './harness.js'
import { pathOf, text, unknownPath } from './wire.js'
import { type DpopValues, dpopValues } from './dpop.js'
import { generateRefreshToken } from '../../../src/lib/tokens.js'

/*
 * Property-based fuzz of the client-facing endpoints (docs/development.md): generated hostile requests to
 * the token, revocation, introspection and token-info endpoints, the revocation stream's
 * refusals, discovery, health, metrics and the stylesheet. Every response: no 5xx, nothing
 * logged at error level, no unhandled rejection, and from the OAuth endpoints RFC 6749 JSON.
 * The properties are in harness.ts; FUZZ_SEED=<n> replays a run.
 */

const TIMEOUT = 180_000
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'
let h: Harness
let tokenDpop: DpopValues
let parDpop: DpopValues
beforeAll(async () => {
  h = await createHarness()
  ;[tokenDpop, parDpop] = await Promise.all([dpopValues('/oauth/token'), dpopValues('/oauth/par')])
})
afterAll(async () => {
  await h?.close()
})

const clientParams = () => {
  const known = knownValues(h.world)
  return { client_id: known.clientIds, client_secret: known.secrets }
}

it(
  'POST /oauth/token',
  async () => {
    const known = knownValues(h.world)
    const params = {
      grant_type: fc.oneof(
        { weight: 6, arbitrary: fc.constant('authorization_code') },
        { weight: 2, arbitrary: fc.constant(DEVICE_GRANT) },
        { weight: 2, arbitrary: fc.constant('refresh_token') },
        fc.constantFrom('client_credentials', 'password', 'implicit', 'AUTHORIZATION_CODE'),
      ),
      // grant_type=refresh_token (docs/expiring-tokens.md): well-formed unknown ones, access tokens, garbage.
      refresh_token: fc.oneof(
        { weight: 2, arbitrary: fc.constant(null).map(() => generateRefreshToken()) },
        { weight: 1, arbitrary: known.tokens },
        fc.constantFrom('', 'grt_', `grt_${'A'.repeat(49)}`, 'grt_\u0000'),
        text(60),
      ),
      scope: fc.oneof(fc.constantFrom('', 'read', 'read write', 'openid', 'admin', ' read  '), text(20)),
      code: known.codes,
      device_code: known.deviceCodes,
      redirect_uri: fc.oneof(
        { weight: 6, arbitrary: fc.constant(REDIRECT_URI) },
        fc.constantFrom(`${REDIRECT_URI}/x`, `${REDIRECT_URI}x`, 'https://evil.example/cb', `${REDIRECT_URI}?code=1`),
      ),
      ...clientParams(),
      // Empty counts as absent (RFC 6749 3.1): what a client without PKCE sends.
      code_verifier: fc.oneof(fc.constant(''), fc.constantFrom(VERIFIER, 'a'.repeat(43), 'a'.repeat(129), 'short', `${VERIFIER}~`)),
      // RFC 8707 §2 (docs/decisions/025-audiences.md).
      resource: resourceValues,
    }
    await h.fuzz(
      '/oauth/token',
      requests(h.world, {
        methods: ['POST'],
        path: pathOf('/oauth/token'),
        query: params,
        body: params,
        headers: { dpop: tokenDpop.header },
      }),
      450,
    )
    // Refused parameters, refused clients, and past client authentication into the exchange.
    expect(h.outcomes('POST /oauth/token')).toEqual(
      expect.arrayContaining([
        '400 invalid_request',
        '401 invalid_client',
        '400 invalid_grant',
        '400 invalid_dpop_proof',
        '400 invalid_target',
      ]),
    )
  },
  TIMEOUT,
)

it(
  'POST /oauth/device_authorization',
  async () => {
    const params = {
      scope: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('', 'read', 'read write') }, fc.constantFrom('admin', 'READ'), text(20)),
      resource: resourceValues,
      ...clientParams(),
    }
    await h.fuzz(
      '/oauth/device_authorization',
      requests(h.world, { methods: ['POST'], path: pathOf('/oauth/device_authorization'), query: params, body: params }),
      250,
    )
    expect(h.outcomes('POST /oauth/device_authorization')).toEqual(
      expect.arrayContaining(['200', '400 invalid_request', '400 invalid_scope', '401 invalid_client', '400 invalid_target']),
    )
  },
  TIMEOUT,
)

const tokenParams = () => {
  const known = knownValues(h.world)
  return { token: known.tokens, token_type_hint: fc.constantFrom('access_token', 'refresh_token', 'bogus'), ...clientParams() }
}

it(
  'POST /oauth/revoke',
  async () => {
    const params = tokenParams()
    await h.fuzz('/oauth/revoke', requests(h.world, { methods: ['POST'], path: pathOf('/oauth/revoke'), query: params, body: params }), 300)
    expect(h.outcomes('POST /oauth/revoke')).toEqual(expect.arrayContaining(['200', '400 invalid_request', '401 invalid_client']))
  },
  TIMEOUT,
)

/** The OpenID Connect request parameters and response modes (docs/openid-connect.md), as clients and attackers send them. */
const oidcRequestParams = {
  prompt: fc.constantFrom('', 'none', 'consent', 'login', 'select_account', 'none consent', 'login consent', 'bogus', 'none\u0000'),
  max_age: fc.oneof(fc.constantFrom('', '0', '60', '-1', '1.5', '1e3', '99999999999999999999'), text(8)),
  login_hint: fc.oneof(fc.constantFrom('', 'a@example.com', '"><script>', 'x'.repeat(300)), text(40)),
  response_mode: fc.constantFrom('', 'query', 'fragment', 'form_post', 'web_message', 'FORM_POST'),
  request: fc.constantFrom('', 'eyJhbGciOiJub25lIn0.e30.'),
  request_uri: fc.oneof(fc.constantFrom('', 'https://client.example/r', 'urn:ietf:params:oauth:request_uri:'), text(60)),
}

it(
  'POST /oauth/par',
  async () => {
    const params = {
      response_type: fc.oneof(
        { weight: 4, arbitrary: fc.constant('code') },
        fc.constantFrom('token', 'id_token', 'token id_token', 'code id_token', ''),
      ),
      redirect_uri: fc.oneof(
        { weight: 4, arbitrary: fc.constant(REDIRECT_URI) },
        fc.constantFrom('https://evil.example/cb', `${REDIRECT_URI}#x`),
      ),
      scope: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('read', 'write_events') }, fc.constantFrom('admin', 'READ', '')),
      state: fc.oneof(fc.constant('s'), text(20)),
      code_challenge: fc.constantFrom('', '', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', 'short'),
      code_challenge_method: fc.constantFrom('', '', '', 'S256', 'plain', 'none'),
      // Mostly absent, so that some requests are valid whole and get stored (201).
      ...Object.fromEntries(
        Object.entries(oidcRequestParams).map(([name, value]) => [name, fc.oneof({ weight: 8, arbitrary: fc.constant('') }, value)]),
      ),
      dpop_jkt: fc.oneof({ weight: 4, arbitrary: fc.constant('') }, parDpop.jkt),
      resource: resourceValues,
      ...clientParams(),
    }
    await h.fuzz(
      '/oauth/par',
      requests(h.world, { methods: ['POST'], path: pathOf('/oauth/par'), body: params, headers: { dpop: parDpop.header } }),
      300,
    )
    expect(h.outcomes('POST /oauth/par')).toEqual(
      expect.arrayContaining(['201', '400 invalid_request', '401 invalid_client', '400 invalid_dpop_proof']),
    )
  },
  TIMEOUT,
)

it(
  'POST /oauth/introspect',
  async () => {
    const params = tokenParams()
    await h.fuzz('/oauth/introspect', requests(h.world, { methods: ['POST'], path: pathOf('/oauth/introspect'), body: params }), 300)
    expect(h.outcomes('POST /oauth/introspect')).toEqual(expect.arrayContaining(['200', '400 invalid_request', '401 invalid_client']))
  },
  TIMEOUT,
)

it(
  'GET /oauth/token/info',
  async () => {
    await h.fuzz(
      '/oauth/token/info',
      requests(h.world, { methods: ['GET'], path: pathOf('/oauth/token/info'), query: { access_token: text() } }),
      250,
    )
    expect(h.outcomes('GET /oauth/token/info')).toEqual(expect.arrayContaining(['200', '401', '401 invalid_token']))
  },
  TIMEOUT,
)

it(
  'GET and POST /oauth/userinfo',
  async () => {
    await h.fuzz(
      '/oauth/userinfo',
      requests(h.world, {
        methods: ['GET', 'POST'],
        path: pathOf('/oauth/userinfo'),
        query: { access_token: text() },
        body: { access_token: text() },
      }),
      250,
    )
    expect([...h.outcomes('GET /oauth/userinfo'), ...h.outcomes('POST /oauth/userinfo')]).toEqual(
      // Claims for a valid openid token: test/integration/oidc/openid-client.test.ts.
      expect.arrayContaining(['401', '401 invalid_token', '403 insufficient_scope']),
    )
  },
  TIMEOUT,
)

it(
  'GET /oauth/revocations/stream: only refusals (a working secret would open the stream, which never ends)',
  async () => {
    await h.fuzz(
      '/oauth/revocations/stream',
      requests(h.world, { methods: ['GET'], path: pathOf('/oauth/revocations/stream'), realClientCredentials: false }),
      150,
    )
    expect(h.outcomes('GET /oauth/revocations/stream')).toEqual(expect.arrayContaining(['401 invalid_client']))
  },
  TIMEOUT,
)

it(
  'discovery, health, metrics, the stylesheet, the icon, the scripts, the logo and paths no route has',
  async () => {
    // The known paths three times in five: each of their GET and HEAD routes is sent about twenty times.
    const path = fc.oneof(
      {
        weight: 3,
        arbitrary: fc
          .constantFrom(
            '/.well-known/oauth-authorization-server',
            '/.well-known/openid-configuration',
            '/.well-known/jwks.json',
            '/healthz',
            '/readyz',
            '/metrics',
            '/static/app.css',
            '/static/favicon.svg',
            '/static/webauthn-browser.js',
            '/static/passkeys.js',
            '/static/copy.js',
            '/static/brand-logo',
          )
          .chain(pathOf),
      },
      unknownPath,
      unknownPath.map((p) => `/oauth${p}`),
    )
    await h.fuzz('operational', requests(h.world, { methods: ['GET', 'HEAD'], path, query: { x: text() } }), 600)
  },
  TIMEOUT,
)

it(
  'CORS preflights of discovery, the JWKS, UserInfo, the token and revocation endpoints (src/http/cors.ts)',
  async () => {
    const path = fc
      .constantFrom(
        '/.well-known/oauth-authorization-server',
        '/.well-known/openid-configuration',
        '/.well-known/jwks.json',
        '/oauth/userinfo',
        '/oauth/token',
        '/oauth/revoke',
      )
      .chain(pathOf)
    await h.fuzz('preflight', requests(h.world, { methods: ['OPTIONS'], path, query: { x: text() } }), 150)
    expect(h.outcomes('OPTIONS preflight')).toEqual(expect.arrayContaining(['204']))
  },
  TIMEOUT,
)

// Last in the file: every route of this suite (harness.ts suiteOf) has been reached by the fuzz above.
it('reached every route that falls to this suite', () => {
  expect(h.unreached('oauth-api')).toEqual([])
})
