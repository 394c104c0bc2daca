import fc from 'fast-check'
import { SignJWT, generateKeyPair } from 'jose'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { type Harness, REDIRECT_URI, VERIFIER, browserRequest, createHarness, knownValues, requests, resourceValues } from './harness.js'
import { encodeText, pathOf, text, unknownPath } from './wire.js'
import { computeS256Challenge } from '../../../src/oauth/token/pkce.js'

/*
 * Property-based fuzz of the browser-facing pages and forms (docs/development.md): /oauth/authorize, log-in,
 * sign-up, log-out, the console, Authorized Applications, the Security log, /reauth, the home page and paths no route has,
 * logged out and logged in with a valid CSRF token (so forms get past the CSRF check). Every
 * response: no 5xx, nothing logged at error level, no unhandled rejection, and errors as HTML
 * pages, never Fastify's JSON. The properties are in harness.ts; FUZZ_SEED=<n> replays a run.
 */

const TIMEOUT = 180_000
let h: Harness
beforeAll(async () => {
  // Behind a trusted proxy, generated X-Forwarded-For and X-Request-Id values are read too
  // (the client address keys the log-in rate limits).
  h = await createHarness({ TRUST_PROXY: '127.0.0.1,::1' })
})
afterAll(async () => {
  await h?.close()
})

/** `next` as a browser or an attacker sends it. */
const next = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('/applications', '/authorized-applications', '/applications/new?x=%E4%B8%80') },
  { weight: 1, arbitrary: fc.constant(null).map(() => `/oauth/authorize?response_type=code&client_id=${h.world.app.clientId}`) },
  { weight: 2, arbitrary: fc.constantFrom('//evil.example', 'https://evil.example/', '/\\evil.example', '/一', '/a b', '/\u0000', '') },
  { weight: 1, arbitrary: text().map((t) => `/${t}`) },
)

it(
  'GET /oauth/authorize',
  async () => {
    const known = knownValues(h.world)
    const query = {
      response_type: fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom('code', 'token') },
        // OpenID Connect's implicit types in either order, and the hybrid ones, which are refused.
        { weight: 2, arbitrary: fc.constantFrom('id_token', 'id_token token', 'token id_token') },
        fc.constantFrom('none', 'code token', 'code id_token', 'code id_token token', 'CODE', 'id_token  token', 'id_token id_token'),
      ),
      client_id: known.clientIds,
      redirect_uri: fc.oneof(
        { weight: 4, arbitrary: fc.constant(REDIRECT_URI) },
        fc.constantFrom(
          `${REDIRECT_URI}/x?y=1`,
          `${REDIRECT_URI}x`,
          `${REDIRECT_URI}?x=1;code=evil`,
          `${REDIRECT_URI}?State=1`,
          'https://evil.example/cb',
          'https://CLIENT.example/cb',
          'https://client.example:443/cb',
          'https://xn--bcher-kva.example/cb',
          'https://bücher.example/cb',
          'com.example.app:/cb',
          'javascript:alert(1)',
          `${REDIRECT_URI}#x`,
          `${REDIRECT_URI}/../x`,
        ),
      ),
      scope: fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom('read', 'write_events', 'read write', 'openid read') },
        fc.constantFrom('admin', 'read  write', 'write_events"\\', 'READ', 'openid'),
      ),
      nonce: fc.oneof({ weight: 2, arbitrary: fc.constantFrom('', 'n-0S6_WzA2Mj') }, text(20)),
      state: text(),
      code_challenge: fc.constantFrom(computeS256Challenge(VERIFIER), VERIFIER, 'short', ''),
      code_challenge_method: fc.constantFrom('S256', 'plain', 's256', 'none', ''),
      // OpenID Connect request parameters and response modes (docs/openid-connect.md).
      prompt: fc.constantFrom('', 'none', 'consent', 'login', 'select_account', 'none consent', 'login consent', 'bogus'),
      max_age: fc.constantFrom('', '0', '3600', '-1', '1.5', '99999999999999999999', 'x'),
      login_hint: fc.oneof(fc.constantFrom('', 'a@example.com', '"><script>', 'x'.repeat(300)), text(40)),
      response_mode: fc.constantFrom('', 'query', 'fragment', 'form_post', 'web_message'),
      request: fc.constantFrom('', '', '', 'eyJhbGciOiJub25lIn0.e30.'),
      request_uri: fc.oneof(
        { weight: 4, arbitrary: fc.constant('') },
        fc.constantFrom(
          'https://client.example/r',
          'urn:ietf:params:oauth:request_uri:',
          'urn:ietf:params:oauth:request_uri:aaaaaaaaaaaaaaaaaaaa',
        ),
        text(60).map((t) => `urn:ietf:params:oauth:request_uri:${t}`),
      ),
      gatehouse_login_asked: fc.constantFrom('', '', '0', '99999999999999', 'x'),
      // RFC 9449 §10: binds the code to a key (docs/dpop.md).
      dpop_jkt: fc.oneof(
        { weight: 4, arbitrary: fc.constant('') },
        fc.constantFrom('0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I', 'A'.repeat(43), 'short', `${'A'.repeat(43)}=`),
        text(50),
      ),
      // RFC 8707 §2 (docs/decisions/025-audiences.md).
      resource: resourceValues,
    }
    await h.fuzz('/oauth/authorize', requests(h.world, { methods: ['GET'], path: pathOf('/oauth/authorize'), query }), 400)
    // Consent pages, error pages, and redirects to the client (codes, tokens, errors) all happened.
    expect(h.outcomes('GET /oauth/authorize')).toEqual(expect.arrayContaining(['200', '400']))
    expect(h.outcomes('GET /oauth/authorize').some((o) => o.startsWith(`302 ${REDIRECT_URI}`))).toBe(true)
  },
  TIMEOUT,
)

it(
  'POST /oauth/authorize (the consent form)',
  async () => {
    const known = knownValues(h.world)
    const body = {
      request_id: known.heldIds,
      decision: fc.oneof(fc.constantFrom('approve', 'deny'), fc.constantFrom('Approve', 'yes', '')),
    }
    await h.fuzz('/oauth/authorize POST', requests(h.world, { methods: ['POST'], path: pathOf('/oauth/authorize'), body, form: true }), 250)
    // Refused forms, unknown or used requests, and answers that went to the client.
    expect(h.outcomes('POST /oauth/authorize POST')).toEqual(expect.arrayContaining(['400', '403']))
    expect(h.outcomes('POST /oauth/authorize POST').some((o) => o.startsWith(`303 ${REDIRECT_URI}`))).toBe(true)
  },
  TIMEOUT,
)

it(
  "GET and POST /device, POST /device/answer (the device flow's page, RFC 8628 3.3)",
  async () => {
    const known = knownValues(h.world)
    await h.fuzz(
      '/device GET',
      requests(h.world, { methods: ['GET'], path: pathOf('/device'), query: { user_code: known.userCodes } }),
      100,
    )
    await h.fuzz(
      '/device POST',
      requests(h.world, { methods: ['POST'], path: pathOf('/device'), body: { user_code: known.userCodes }, form: true }),
      200,
    )
    const answer = {
      request_id: known.deviceRequestIds,
      decision: fc.oneof(fc.constantFrom('approve', 'deny'), fc.constantFrom('yes', '')),
    }
    await h.fuzz('/device/answer', requests(h.world, { methods: ['POST'], path: pathOf('/device/answer'), body: answer, form: true }), 150)
    expect(h.outcomes('POST /device POST')).toEqual(expect.arrayContaining(['200', '400', '403']))
    expect(h.outcomes('POST /device/answer')).toEqual(expect.arrayContaining(['200', '400']))
  },
  TIMEOUT,
)

const credentials = () => ({
  email: fc.oneof(
    { weight: 2, arbitrary: fc.constant(h.world.user.email) },
    fc.constantFrom('new-user@example.com', 'FUZZ@EXAMPLE.COM', 'a@b', 'not-an-email', `${'a'.repeat(250)}@example.com`),
    text(),
  ),
  password: fc.oneof({ weight: 3, arbitrary: fc.constant(h.world.user.password) }, fc.constantFrom('short', 'x'.repeat(257)), text()),
  next,
})

it(
  '/login and /signup',
  async () => {
    const paths = fc.constantFrom('/login', '/signup').chain(pathOf)
    await h.fuzz(
      '/login',
      requests(h.world, {
        methods: ['GET', 'POST'],
        path: paths,
        query: { next, email: text(), signed_up: fc.constant('1'), fresh: fc.constantFrom('', '1', 'yes') },
        body: credentials(),
        form: true,
      }),
      250,
    )
    // Past the CSRF check: failed log-ins, refused fields, log-ins and sign-ups that went through.
    expect(h.outcomes('POST /login')).toEqual(expect.arrayContaining(['400', '401', '403']))
    expect(h.outcomes('POST /login').some((o) => o.startsWith('303 /'))).toBe(true)
  },
  TIMEOUT,
)

it(
  'POST /logout',
  async () => {
    await h.fuzz('/logout', requests(h.world, { methods: ['POST'], path: pathOf('/logout'), body: {}, form: true }), 100)
    expect(h.outcomes('POST /logout')).toEqual(expect.arrayContaining(['303 /login', '403']))
  },
  TIMEOUT,
)

it(
  '/oauth/logout and its confirmation (OpenID Connect RP-Initiated Logout 1.0)',
  async () => {
    const { t, user, app, foreign } = h.world
    const signedOut = `${REDIRECT_URI}/signed-out`
    await t.db
      .updateTable('applications')
      .set({ post_logout_redirect_uris: [signedOut] })
      .where('id', '=', app.id)
      .execute()
    const now = Math.floor(t.clock().getTime() / 1000)
    const claims = { iss: t.config.publicUrl, sub: user.id, aud: app.clientId, iat: now, exp: now + 3600 }
    const sign = (extra: Record<string, unknown>) => t.deps.identity.signIdToken('RS256', { ...claims, ...extra })
    const { privateKey } = await generateKeyPair('RS256')
    const hints = [
      await sign({}),
      await sign({ exp: now - 7200 }),
      await sign({ aud: foreign.clientId }),
      await sign({ sub: 'someone-else', sid: 'x' }),
      await sign({ aud: [app.clientId, foreign.clientId] }),
      await sign({ iss: 'https://evil.example' }),
      await new SignJWT(claims).setProtectedHeader({ alg: 'RS256' }).sign(privateKey),
    ]
    const params = {
      id_token_hint: fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...hints) },
        fc.constantFrom('', 'eyJhbGciOiJub25lIn0.e30.', 'a.b.c', 'x'.repeat(9000)),
        text(80),
      ),
      client_id: fc.oneof({ weight: 1, arbitrary: fc.constant('') }, knownValues(h.world).clientIds),
      post_logout_redirect_uri: fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(signedOut, '') },
        fc.constantFrom(REDIRECT_URI, `${signedOut}/x`, `${signedOut}?a=1`, 'https://evil.example/', 'javascript:alert(1)'),
        text(40),
      ),
      state: fc.oneof(text(), fc.constant('s'.repeat(3000))),
      ui_locales: fc.constantFrom('', 'en', 'de fr'),
      logout_hint: text(20),
    }
    const path = fc.constantFrom('/oauth/logout', '/oauth/logout/confirm').chain(pathOf)
    // The user once granted the application access, so its hint for them, in their browser, is
    // trusted (docs/decisions/005-trusted-redirects.md): straight back to its registered URI.
    const granted = t.clock()
    await t.db
      .insertInto('grants')
      .values({ user_id: user.id, application_id: app.id, scopes: ['read'], created_at: granted, updated_at: granted })
      .onConflict((oc) => oc.constraint('grants_user_application_key').doNothing())
      .execute()
    const back = browserRequest(h.world, 'POST', '/oauth/logout', {
      id_token_hint: hints[0]!,
      post_logout_redirect_uri: signedOut,
      state: 's',
    })
    // With no session, the same hint proves nothing of the browser: the signed-out page links back instead.
    const linked = browserRequest(
      h.world,
      'GET',
      '/oauth/logout',
      { id_token_hint: hints[0]!, post_logout_redirect_uri: signedOut, state: 's' },
      { session: false },
    )
    await h.fuzz('/oauth/logout', requests(h.world, { methods: ['GET', 'POST'], path, query: params, body: params, form: true }), 300, [
      back,
      linked,
    ])
    const outcomes = [...h.outcomes('GET /oauth/logout'), ...h.outcomes('POST /oauth/logout')]
    // Refusals, confirmation pages, "signed out" pages, and returns to the registered URI only.
    expect(outcomes).toEqual(expect.arrayContaining(['200', '400']))
    expect(outcomes.some((o) => o.startsWith(`303 ${signedOut}`))).toBe(true)
    // Never any other redirect: the fuzz's other targets (REDIRECT_URI, evil.example, javascript:) never appear.
    for (const o of outcomes.filter((x) => x.startsWith('30'))) expect(o).toBe(`303 ${signedOut}`)
  },
  TIMEOUT,
)

/** The optional https links of the application form (homepage, privacy policy): empty, good, refused, or anything. */
const link = () =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom('', 'https://planner.example/', 'https://planner.example/privacy?lang=en') },
    fc.constantFrom(
      'http://planner.example/',
      'javascript:alert(1)',
      'JAVASCRIPT:alert(1)',
      'data:text/html,<script>alert(1)</script>',
      'https://a@b.example/',
      'https://user:pw@planner.example/',
      'https://planner.example/\u0000',
      'https://planner.example/\r\nSet-Cookie: x=1',
      'https://planner.example/\u202e',
      'https://bücher.example/',
      'https://[::1]/',
      'https://planner.example:99999/',
      'https:planner.example',
      '//planner.example/',
      '   https://planner.example/   ',
      `https://planner.example/${'a'.repeat(477)}`,
      `https://planner.example/${'a'.repeat(600)}`,
    ),
    text(),
  )

const applicationForm = () => ({
  kind: fc.oneof({ weight: 6, arbitrary: fc.constantFrom('web', 'native', 'spa', 'machine') }, text()),
  name: fc.oneof({ weight: 6, arbitrary: fc.constant('Team Planner') }, text(), fc.constant('n'.repeat(101))),
  description: fc.oneof(fc.constant(''), text(), fc.constant('Line one\r\nLine two\tx')),
  homepage_url: link(),
  privacy_policy_url: link(),
  redirect_uris: fc.oneof(
    { weight: 3, arbitrary: fc.constant(REDIRECT_URI) },
    fc.constantFrom(
      `${REDIRECT_URI}\r\nhttps://other.example/cb`,
      'com.example.app:/cb',
      'com.example.app://cb',
      'https://bücher.example/cb',
      'javascript:alert(1)',
      `${REDIRECT_URI}?code=1`,
      'http://localhost:8080/cb',
      'https://*.example/cb',
      Array.from({ length: 21 }, (_, i) => `https://a${i}.example/cb`).join('\n'),
      '\n\n\n',
    ),
    text(),
  ),
  post_logout_redirect_uris: fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom('', `${REDIRECT_URI}/signed-out`) },
    fc.constantFrom(
      'javascript:alert(1)',
      'https://*.example/bye',
      Array.from({ length: 21 }, (_, i) => `https://a${i}.example/bye`).join('\n'),
    ),
    text(),
  ),
  scopes: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('read', 'write', 'write_events') }, fc.constantFrom('admin', '')),
  require_pkce: fc.constantFrom('on', '', 'off'),
  allow_implicit: fc.constantFrom('on', '', 'off'),
  // The token policy's form (/applications/:id/tokens): presets, and what no form offers.
  dpop: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('optional', 'required') }, text()),
  lifetime: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('until-revoked', 'expiring') }, text()),
  access_lifetime: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('1h', '8h', '24h') },
    fc.constantFrom('3600', '0', '-1', '1e9'),
    text(),
  ),
  refresh_lifetime: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('30d', '90d', '180d') }, fc.constantFrom('1h', '10y'), text()),
})

it(
  'the console: /applications, /applications/new, /applications/:id and its edit, secret, kind, tokens and delete pages',
  async () => {
    const known = knownValues(h.world)
    const id = fc.oneof(
      { weight: 6, arbitrary: known.appIds.map(encodeText) },
      {
        weight: 1,
        arbitrary: fc.constantFrom('new', '%zz', '..', '%2e%2e', '0', 'a'.repeat(120), '%00', '00000000-0000-0000-0000-00000000000g'),
      },
      { weight: 1, arbitrary: text(40).map(encodeText) },
    )
    const path = fc.oneof(
      fc.constantFrom('/applications', '/applications/new').chain(pathOf),
      fc
        .tuple(id, fc.constantFrom('', '/edit', '/secret', '/kind', '/tokens', '/delete'))
        .map(([i, suffix]) => `/applications/${i}${suffix}`),
    )
    const query = { deleted: fc.constant('1'), updated: fc.constant('1') }
    // A registration as the form sends it, with both links.
    const registration = browserRequest(h.world, 'POST', '/applications', {
      name: 'Team Planner',
      description: '',
      homepage_url: 'https://planner.example/',
      privacy_policy_url: 'https://planner.example/privacy',
      redirect_uris: REDIRECT_URI,
      post_logout_redirect_uris: '',
      scopes: 'read',
      require_pkce: 'on',
    })
    await h.fuzz('console', requests(h.world, { methods: ['GET', 'POST'], path, query, body: applicationForm(), form: true }), 600, [
      registration,
    ])
    const outcomes = h.outcomes('POST console')
    // Forms refused, applications registered or secrets regenerated, and deletions done.
    expect(outcomes).toEqual(expect.arrayContaining(['200', '400', '403', '404', '303 /applications']))
    // Some registrations and edits went through with links, which were stored as https links only.
    const links = await h.world.t.db.selectFrom('applications').select(['homepage_url', 'privacy_policy_url']).execute()
    const stored = links.flatMap((l) => [l.homepage_url, l.privacy_policy_url]).filter((v) => v !== null)
    expect(stored.length).toBeGreaterThan(0)
    for (const url of stored) expect(new URL(url).protocol).toBe('https:')
  },
  TIMEOUT,
)

it(
  'the admin pages: /admin, users and applications, their confirmation pages and actions',
  async () => {
    const known = knownValues(h.world)
    const other = await h.world.t.db
      .insertInto('users')
      .values({ email: 'fuzz-other@example.com', password_hash: 'x', created_at: new Date() })
      .returning('id')
      .executeTakeFirstOrThrow()
    await h.world.t.db.updateTable('users').set({ is_operator: true }).where('id', '=', h.world.user.id).execute()
    try {
      // Each kind's own ids mostly (a user's page for an application's id is the 404 page), the other kind's now and then.
      const junkId = fc.oneof(
        fc.constantFrom('%zz', '..', '0', 'a'.repeat(120), '%00', '00000000-0000-0000-0000-00000000000g'),
        text(40).map(encodeText),
      )
      const userIds = fc.constantFrom(other.id, h.world.user.id)
      const appIds = known.appIds.map(encodeText)
      const id = (kind: 'users' | 'applications') =>
        fc.oneof(
          { weight: 4, arbitrary: kind === 'users' ? userIds : appIds },
          { weight: 1, arbitrary: kind === 'users' ? appIds : userIds },
          { weight: 2, arbitrary: junkId },
        )
      // The page itself (no action) three times as often as each action.
      const action = fc.constantFrom(
        '',
        '',
        '',
        '/suspend',
        '/unsuspend',
        '/verify',
        '/unverify',
        '/resource-server-on',
        '/resource-server-off',
        '/client-credentials',
        '/resources',
        '/delete',
        '/reset-second-factor',
        '/x',
      )
      const path = fc.oneof(
        fc.constantFrom('/admin', '/admin/users', '/admin/applications', '/admin/audit').chain(pathOf),
        fc
          .constantFrom('users' as const, 'applications' as const)
          .chain((kind) => fc.tuple(fc.constant(kind), id(kind), action))
          .map(([kind, i, a]) => `/admin/${kind}/${i}${a}`),
      )
      const query = {
        q: fc.oneof(fc.constantFrom('fuzz', '', '%', '_'), text()),
        page: fc.oneof(fc.constantFrom('1', '2', '0', '-1', '999999999'), text(8)),
        done: fc.constantFrom('suspend', 'x'),
        event: fc.oneof(fc.constantFrom('user.logged_in', 'operator.added', 'toString', '__proto__'), text(20)),
        user: fc.oneof(fc.constantFrom('fuzz@example.com', 'FUZZ@example.com', ''), text(30)),
        client_id: fc.oneof(known.clientIds, text(30)),
        from: fc.oneof(fc.constantFrom('2026-01-01', '2026-02-30', '0000-00-00', '9999-12-31'), text(12)),
        to: fc.oneof(fc.constantFrom('2099-12-31', '1970-01-01'), text(12)),
        before: fc.oneof(fc.constantFrom('1.1', '99999999999999.999999999999999999', '1.-1'), text(20)),
      }
      // An action's confirmation page for each kind.
      const confirmations = [`/admin/users/${other.id}/suspend`, `/admin/applications/${h.world.app.id}/suspend`].map((page) =>
        browserRequest(h.world, 'GET', page),
      )
      // The resource identifiers' form (RFC 8707): the whole list, one per line, and a lifetime.
      const body = {
        identifiers: fc.oneof(fc.constantFrom('', 'https://api.fuzz.test/', 'https://new.fuzz.test/\nhttp://x/', 'a#b'), text(60)),
        ttl: fc.oneof(fc.constantFrom('', '60', '5', '604801', 'x', '99999999999'), text(8)),
      }
      await h.fuzz('admin', requests(h.world, { methods: ['GET', 'POST'], path, query, body, form: true }), 800, confirmations)
      expect(h.outcomes('POST admin')).toEqual(expect.arrayContaining(['403', '404']))
      expect(h.outcomes('GET admin')).toEqual(expect.arrayContaining(['200', '404']))
    } finally {
      await h.world.t.db.updateTable('users').set({ is_operator: false }).where('id', '=', h.world.user.id).execute()
    }
  },
  TIMEOUT,
)

it(
  '/authorized-applications and revoking a grant',
  async () => {
    const known = knownValues(h.world)
    const path = fc.oneof(
      { weight: 1, arbitrary: pathOf('/authorized-applications') },
      {
        weight: 2,
        arbitrary: fc
          .oneof(
            { weight: 2, arbitrary: known.grantIds.map(encodeText) },
            { weight: 2, arbitrary: known.otherIds.map(encodeText) },
            { weight: 1, arbitrary: fc.constantFrom('%zz', '%00', '', 'a'.repeat(120)) },
          )
          .map((g) => `/authorized-applications/${g}/revoke`),
      },
    )
    await h.fuzz(
      '/authorized-applications',
      requests(h.world, { methods: ['GET', 'POST'], path, query: { revoked: fc.constant('1') }, body: {}, form: true }),
      200,
    )
    expect(h.outcomes('POST /authorized-applications')).toEqual(expect.arrayContaining(['303 /authorized-applications', '403']))
  },
  TIMEOUT,
)

it(
  '/reauth ("Confirm it\'s you")',
  async () => {
    const body = {
      password: fc.oneof({ weight: 2, arbitrary: fc.constant(h.world.user.password) }, fc.constantFrom('', 'x'.repeat(257)), text()),
      next,
    }
    await h.fuzz(
      '/reauth',
      requests(h.world, { methods: ['GET', 'POST'], path: pathOf('/reauth'), query: { next }, body, form: true }),
      200,
    )
    // Confirmations sent on, wrong passwords, refused forms, and visitors sent to log in.
    expect(h.outcomes('POST /reauth')).toEqual(expect.arrayContaining(['400', '403']))
    expect(h.outcomes('POST /reauth').some((o) => o.startsWith('303 /'))).toBe(true)
    expect(h.outcomes('GET /reauth')).toEqual(expect.arrayContaining(['200']))
  },
  TIMEOUT,
)

it(
  'POST /account/profile (the display name)',
  async () => {
    await h.fuzz(
      '/account/profile',
      requests(h.world, { methods: ['POST'], path: pathOf('/account/profile'), body: { display_name: text() }, form: true }),
      150,
    )
    expect(h.outcomes('POST /account/profile')).toEqual(expect.arrayContaining(['303 /account', '303 /login']))
  },
  TIMEOUT,
)

it(
  '/account/security-log and its pages',
  async () => {
    // "Older events" cursors as the page writes them (`<ms>.<id>`), near misses, and anything at all.
    const before = fc.oneof(
      { weight: 2, arbitrary: fc.tuple(fc.nat({ max: 4_102_444_800_000 }), fc.nat()).map(([ms, id]) => `${ms}.${id}`) },
      fc.constantFrom('', '.', '1.', '.1', '1.2.3', '99999999999999999999.1', '1.99999999999999999999', '-1.1', '1e3.1', '0x1.1'),
      text(),
    )
    await h.fuzz(
      '/account/security-log',
      requests(h.world, { methods: ['GET', 'POST'], path: pathOf('/account/security-log'), query: { before }, body: {}, form: true }),
      150,
    )
    // The page itself, the log-in page for a visitor without a session, and POST, which no route serves.
    expect(h.outcomes('GET /account/security-log')).toEqual(expect.arrayContaining(['200', '303 /login']))
  },
  TIMEOUT,
)

it(
  'the home page and paths no route has',
  async () => {
    await h.fuzz(
      'unknown',
      requests(h.world, {
        methods: ['GET', 'POST'],
        path: fc.oneof(pathOf('/'), unknownPath),
        query: { x: text() },
        body: { x: text() },
        form: true,
      }),
      200,
    )
  },
  TIMEOUT,
)

// Last in the file: every route of this suite (harness.ts suiteOf) has been reached by the fuzz above.
it('reached every route that falls to this suite', () => {
  expect(h.unreached('pages')).toEqual([])
})
