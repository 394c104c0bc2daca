import { describe, expect, it } from 'vitest'
import {
  RESPONSE_PARAMETERS,
  buildRedirect,
  describeRedirectTarget,
  findMatchingRedirectUri,
} from '../../src/oauth/clients/redirect-uri.js'
import { unicodeHostOf, validateRegisteredRedirectUri } from '../../src/oauth/clients/redirect-uri-registration.js'

const REG = ['https://app.example.com/cb']

/** Whether the redirect URI sent is accepted, as /oauth/authorize decides it. */
const matches = (sent: string, registered: readonly string[]) => findMatchingRedirectUri(sent, registered) !== null

describe('findMatchingRedirectUri (docs/decisions/001-redirect-uri-matching.md, "subpath")', () => {
  const allowed: Array<[string, string[], string]> = [
    ['exact match', REG, 'https://app.example.com/cb'],
    ['deeper path', REG, 'https://app.example.com/cb/deeper/still'],
    ['trailing slash after the registered path', REG, 'https://app.example.com/cb/'],
    ['registered trailing slash, deeper path', ['https://app.example.com/cb/'], 'https://app.example.com/cb/x'],
    ['registered host root covers every path', ['https://app.example.com'], 'https://app.example.com/any/path'],
    ['default port written out', REG, 'https://app.example.com:443/cb'],
    ['registered default port, sent without', ['https://app.example.com:443/cb'], 'https://app.example.com/cb'],
    ['upper-case host', REG, 'https://APP.Example.COM/cb'],
    ['upper-case scheme', REG, 'HTTPS://app.example.com/cb'],
    ['added query', REG, 'https://app.example.com/cb?tab=1&lang=en'],
    ['added query on a deeper path', REG, 'https://app.example.com/cb/x?next=%2Fhome'],
    ['loopback IPv4 with another port (RFC 8252 7.3)', ['http://127.0.0.1/cb'], 'http://127.0.0.1:51004/cb'],
    ['loopback IPv4, registered port, another port', ['http://127.0.0.1:8080/cb'], 'http://127.0.0.1:9999/cb'],
    ['loopback IPv6 with another port', ['http://[::1]:3000/cb'], 'http://[::1]:61000/cb'],
    ['localhost with the same port', ['http://localhost:3000/cb'], 'http://localhost:3000/cb'],
    ['private-use scheme', ['com.example.app:/oauth'], 'com.example.app:/oauth'],
    ['private-use scheme, deeper path', ['com.example.app:/oauth'], 'com.example.app:/oauth/done'],
    ['second registered URI', ['https://a.example/one', 'https://b.example/two'], 'https://b.example/two'],
    ['registered query repeated exactly', ['https://app.example.com/cb?tenant=7'], 'https://app.example.com/cb?tenant=7'],
    ['percent-encoded ordinary character', REG, 'https://app.example.com/cb/a%41b'],
  ]
  it.each(allowed)('allows: %s', (_name, registered, sent) => {
    expect(matches(sent, registered)).toBe(true)
  })

  const refused: Array<[string, string[], string]> = [
    ['/cb vs /cbevil', REG, 'https://app.example.com/cbevil'],
    ['/cb vs /cb.evil', REG, 'https://app.example.com/cb.evil'],
    ['registered trailing slash, sent without', ['https://app.example.com/cb/'], 'https://app.example.com/cb'],
    ['parent path', ['https://app.example.com/cb/x'], 'https://app.example.com/cb'],
    ['raw dot-dot segment', REG, 'https://app.example.com/cb/../x'],
    ['raw dot segment', REG, 'https://app.example.com/cb/./x'],
    ['trailing dot-dot', REG, 'https://app.example.com/cb/..'],
    ['percent-encoded dot-dot', REG, 'https://app.example.com/cb/%2e%2e/x'],
    ['mixed-case encoded dot-dot', REG, 'https://app.example.com/cb/%2E%2e/x'],
    ['half-encoded dot-dot', REG, 'https://app.example.com/cb/.%2e/x'],
    ['encoded single dot', REG, 'https://app.example.com/cb/%2e/x'],
    ['double-encoded dot-dot', REG, 'https://app.example.com/cb/%252e%252e/x'],
    ['triple-encoded dot-dot', REG, 'https://app.example.com/cb/%25252e%25252e/x'],
    ['dot-dot with path parameter', REG, 'https://app.example.com/cb/..;/x'],
    ['encoded slash', REG, 'https://app.example.com/cb%2f..%2fx'],
    ['encoded slash upper case', REG, 'https://app.example.com/cb/a%2Fb'],
    ['double-encoded slash', REG, 'https://app.example.com/cb/a%252Fb'],
    ['encoded backslash', REG, 'https://app.example.com/cb/%5c..%5cx'],
    ['raw backslash', REG, 'https://app.example.com/cb\\..\\x'],
    ['backslash authority trick', REG, 'https://app.example.com\\@evil.example/cb'],
    ['malformed escape', REG, 'https://app.example.com/cb/%zz'],
    ['userinfo', REG, 'https://app.example.com@evil.example/cb'],
    ['userinfo with the registered host as user', ['https://good.example/cb'], 'https://good@evil.example/cb'],
    ['userinfo even for the same host', REG, 'https://user:pw@app.example.com/cb'],
    ['other scheme', REG, 'http://app.example.com/cb'],
    ['other host', REG, 'https://evil.example/cb'],
    ['subdomain', REG, 'https://evil.app.example.com/cb'],
    ['parent domain', REG, 'https://example.com/cb'],
    ['host suffix', REG, 'https://app.example.com.evil.example/cb'],
    ['other port', REG, 'https://app.example.com:8443/cb'],
    ['trailing-dot host', REG, 'https://app.example.com./cb'],
    ['percent-encoded host', REG, 'https://app.ex%61mple.com/cb'],
    ['fragment', REG, 'https://app.example.com/cb#x'],
    ['empty fragment', REG, 'https://app.example.com/cb#'],
    ['space', REG, 'https://app.example.com/cb x'],
    ['leading space', REG, ' https://app.example.com/cb'],
    ['trailing newline', REG, 'https://app.example.com/cb\n'],
    ['CRLF', REG, 'https://app.example.com/cb\r\nSet-Cookie:x'],
    ['tab', REG, 'https://app.example.com/cb\t'],
    ['NUL', REG, 'https://app.example.com/cb\u0000'],
    ['non-breaking space', REG, 'https://app.example.com/cb\u00a0'],
    ['non-ASCII', REG, 'https://app.example.com/cb/é'],
    ['encoded CRLF in the path', REG, 'https://app.example.com/cb/%0d%0a'],
    ['query carrying code', REG, 'https://app.example.com/cb?code=attacker'],
    ['query carrying state', REG, 'https://app.example.com/cb?x=1&state=attacker'],
    ['query carrying access_token', REG, 'https://app.example.com/cb?access_token=x'],
    ['query carrying error', REG, 'https://app.example.com/cb?error=x'],
    ['query carrying iss', REG, 'https://app.example.com/cb?iss=https://evil.example'],
    ['query carrying encoded code', REG, 'https://app.example.com/cb?c%6fde=x'],
    ['query carrying double-encoded state', REG, 'https://app.example.com/cb?%2573tate=x'],
    ['query with malformed escape', REG, 'https://app.example.com/cb?a=%zz'],
    ['other query than the registered one', ['https://app.example.com/cb?tenant=7'], 'https://app.example.com/cb?tenant=8'],
    ['localhost with another port', ['http://localhost:3000/cb'], 'http://localhost:3001/cb'],
    ['localhost without the registered port', ['http://localhost:3000/cb'], 'http://localhost/cb'],
    ['loopback IP, other path', ['http://127.0.0.1/cb'], 'http://127.0.0.1:5000/other'],
    ['loopback alias not literal', ['http://127.0.0.1/cb'], 'http://127.1:5000/cb'],
    ['localhost for a registered loopback IP', ['http://127.0.0.1/cb'], 'http://localhost/cb'],
    ['https loopback is not any-port', ['https://127.0.0.1/cb'], 'https://127.0.0.1:8443/cb'],
    ['no authority', REG, 'https:/app.example.com/cb'],
    ['empty authority', REG, 'https:///app.example.com/cb'],
    ['relative URI', REG, '/cb'],
    ['protocol-relative URI', REG, '//app.example.com/cb'],
    ['javascript', REG, 'javascript:alert(1)//https://app.example.com/cb'],
    ['data', REG, 'data:text/html,https://app.example.com/cb'],
    ['wildcard', REG, 'https://app.example.com/cb/*'],
    ['private-use scheme of another app', ['com.example.app:/oauth'], 'com.evil.app:/oauth'],
    ['private-use scheme, other path', ['com.example.app:/oauth'], 'com.example.app:/oauthx'],
    ['empty string', REG, ''],
    ['very long', REG, `https://app.example.com/cb/${'a'.repeat(3000)}`],
  ]
  it.each(refused)('refuses: %s', (_name, registered, sent) => {
    expect(matches(sent, registered)).toBe(false)
  })

  it('returns the registered URI that matched', () => {
    expect(findMatchingRedirectUri('https://b.example/two/x', ['https://a.example/one', 'https://b.example/two'])).toBe(
      'https://b.example/two',
    )
    expect(findMatchingRedirectUri('https://c.example/', ['https://a.example/one'])).toBeNull()
  })

  it('ignores a malformed registered URI instead of matching it loosely', () => {
    expect(matches('https://app.example.com/cb', ['not a uri', ...REG])).toBe(true)
    expect(matches('https://app.example.com/cb', ['https://*.example.com/cb'])).toBe(false)
  })
})

describe('validateRegisteredRedirectUri', () => {
  const accepted = [
    'https://app.example.com/callback',
    'https://app.example.com',
    'https://app.example.com:8443/cb?tenant=7',
    'http://localhost:3000/cb',
    'http://localhost/cb',
    'http://127.0.0.1/cb',
    'http://127.0.0.1:8080/cb',
    'http://[::1]/cb',
    'com.example.app:/oauth2redirect',
    'com.example.app:/',
    'https://xn--bcher-kva.example/cb',
    'https://app.example.com/cb?scopes=all&codes=1&state_of=x&errors=0',
  ]
  it.each(accepted)('accepts %s', (uri) => {
    expect(validateRegisteredRedirectUri(uri)).toEqual({ ok: true, uri })
  })

  const rejected: Array<[string, RegExp]> = [
    ['', /empty/],
    ['javascript:alert(1)', /javascript: scheme/],
    ['JavaScript:alert(1)', /javascript: scheme/],
    ['data:text/html,hi', /data: scheme/],
    ['file:///etc/passwd', /file: scheme/],
    ['vbscript:msgbox', /vbscript: scheme/],
    ['http://app.example.com/cb', /https/],
    ['http://192.168.1.10/cb', /https/],
    ['ftp://app.example.com/cb', /private-use scheme/],
    ['myapp:/cb', /private-use scheme with a dot/],
    ['com.example.app:cb', /path starting with \//],
    ['https://*.example.com/cb', /wildcard/],
    ['https://app.example.com/*', /wildcard/],
    ['https://user@app.example.com/cb', /user information/],
    ['https://user:pw@app.example.com/cb', /user information/],
    ['https://app.example.com/cb#frag', /fragment/],
    ['https://app.example.com/cb x', /spaces/],
    ['https://app.example.com/cb\u0007', /control/],
    ['https://app.example.com/c\\b', /backslash/],
    ['https://app.example.com/cb/../x', /dot segments/],
    ['https://app.example.com/cb/%2E%2E/x', /dot segments/],
    ['https://app.example.com/a%2fb', /encoded slash/],
    ['https://app.example.com./cb', /dot/],
    ['https://app..example.com/cb', /host name/],
    ['https://app.example.com:99999/cb', /port/],
    ['https://app.example.com:0/cb', /port/],
    ['https:///cb', /host/],
    ['https:/app.example.com/cb', /host/],
    ['/relative/cb', /absolute URI/],
    ['app.example.com/cb', /absolute URI/],
    ['https://app.example.com/cb?code=1', /"code"/],
    ['https://bücher.example/cb/é', /non-ASCII characters only in the host name/],
    ['https://bücher.example/cb?q=é', /non-ASCII characters only in the host name/],
    ['com.example.app:/é', /non-ASCII characters only in the host name/],
    ['https://a／b.example/cb', /not a valid internationalised domain name/],
    ['https://xn--zz.example/cb', /host name/],
    // A last label of digits: the URL parser takes the host for an IPv4 address and refuses it.
    ['https://xn--bcher-kva.123/cb', /host name/],
    // Decodes to U+0080, a control character no domain name may hold.
    ['https://xn--a.example/cb', /invalid xn-- \(punycode\) label/],
    // Decodes to "a" and a combining grave accent: à spelled a second way, not the form UTS #46 gives (xn--0ca).
    ['https://xn--a-vbb.example/cb', /invalid xn-- \(punycode\) label/],
  ]
  it.each(rejected)('rejects %j', (uri, reason) => {
    const r = validateRegisteredRedirectUri(uri)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.reason).toMatch(reason)
  })

  it('accepts every registered URI the matcher can then match exactly', () => {
    for (const uri of accepted) expect(matches(uri, [uri])).toBe(true)
  })
})

describe('response parameters in a query, under any case or separator (RFC 6749 4.1.2, 4.2.2, 5.1; RFC 9207; OpenID Connect Core 3.2.2.5)', () => {
  it('covers every parameter an authorization response or error can carry', () => {
    expect([...RESPONSE_PARAMETERS].sort()).toEqual(
      [
        'access_token',
        'code',
        'error',
        'error_description',
        'error_uri',
        'expires_in',
        'id_token',
        'iss',
        'refresh_token',
        'scope',
        'state',
        'token_type',
      ].sort(),
    )
  })

  const smuggled: Array<[string, string]> = [
    ['after a semicolon', 'https://app.example.com/cb?x=1;code=evil'],
    ['semicolon first', 'https://app.example.com/cb?;state=1'],
    ['capitalised', 'https://app.example.com/cb?State=1'],
    ['upper case', 'https://app.example.com/cb?CODE=1'],
    ['mixed case, percent-encoded', 'https://app.example.com/cb?Acc%65ss_Token=1'],
    ['with an array suffix', 'https://app.example.com/cb?code[]=1'],
    ['with an encoded array suffix', 'https://app.example.com/cb?state%5B0%5D=1'],
    ['with a dot for the underscore', 'https://app.example.com/cb?access.token=1'],
    ['with a hyphen for the underscore', 'https://app.example.com/cb?error-description=1'],
    ['with a space for the underscore', 'https://app.example.com/cb?token+type=1'],
    ['with surrounding spaces', 'https://app.example.com/cb?%20iss%20=x'],
    ['behind an encoded ampersand', 'https://app.example.com/cb?x=1%26code%3Devil'],
    ['behind an encoded semicolon', 'https://app.example.com/cb?x=1%3Bstate%3D1'],
    ['behind a double-encoded ampersand', 'https://app.example.com/cb?x=1%2526code%253Devil'],
    ['without a value', 'https://app.example.com/cb?error'],
    ['expires_in', 'https://app.example.com/cb?expires_in=3600'],
    ['scope', 'https://app.example.com/cb?scope=write'],
    ['refresh_token', 'https://app.example.com/cb?refresh_token=r'],
    ['error_uri', 'https://app.example.com/cb?error_uri=https://evil.example'],
    ['token_type', 'https://app.example.com/cb?token_type=bearer'],
    ['id_token', 'https://app.example.com/cb?id_token=eyJ'],
  ]

  it.each(smuggled)('refuses a sent redirect_uri with one %s', (_name, uri) => {
    expect(matches(uri, REG)).toBe(false)
  })

  it.each(smuggled)('refuses registering a redirect URI with one %s', (_name, uri) => {
    const r = validateRegisteredRedirectUri(uri)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.reason).toMatch(/must not set the query parameter .*which the server adds/)
  })

  it('names the key as written and the parameter it is read as', () => {
    expect(validateRegisteredRedirectUri('https://app.example.com/cb?x=1;CODE=evil')).toEqual({
      ok: false,
      reason: 'must not set the query parameter "CODE" (read as code), which the server adds to the response',
    })
  })

  it('refuses a registered URI whose stored query carries one, even registered before the rule', () => {
    const registered = ['https://app.example.com/cb?State=1']
    expect(matches('https://app.example.com/cb?State=1', registered)).toBe(false)
  })

  it('allows parameters that merely contain such a name', () => {
    for (const uri of [
      'https://app.example.com/cb?codes=1',
      'https://app.example.com/cb?my_state=1;x=2',
      'https://app.example.com/cb?scoped=1',
    ])
      expect(matches(uri, REG)).toBe(true)
  })
})

describe('private-use schemes take a single slash (RFC 8252 7.1)', () => {
  it.each(['com.example.app://cb', 'com.example.app://', 'COM.Example.App://callback/x', 'com.example.app:///cb'])('refuses %s', (uri) => {
    const r = validateRegisteredRedirectUri(uri)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.reason).toMatch(/single slash after a private-use scheme, as in com\.example\.app:\/callback.*RFC 8252 7\.1/)
  })

  it('accepts scheme:/path', () => {
    expect(validateRegisteredRedirectUri('com.example.app:/cb')).toEqual({ ok: true, uri: 'com.example.app:/cb' })
  })
})

describe('internationalised host names are registered in their ASCII form', () => {
  it('stores https://bücher.example/cb as https://xn--bcher-kva.example/cb, saying so', () => {
    expect(validateRegisteredRedirectUri('https://bücher.example/cb')).toEqual({
      ok: true,
      uri: 'https://xn--bcher-kva.example/cb',
      idn: { typed: 'bücher.example', stored: 'xn--bcher-kva.example' },
    })
  })

  it('keeps port, path and query, and applies the browser mapping (case, full-width forms)', () => {
    expect(validateRegisteredRedirectUri('https://Bücher.Example:8443/o/cb?tenant=7')).toMatchObject({
      ok: true,
      uri: 'https://xn--bcher-kva.example:8443/o/cb?tenant=7',
    })
    expect(validateRegisteredRedirectUri('https://ｂüｃｈｅｒ.example/cb')).toMatchObject({
      ok: true,
      uri: 'https://xn--bcher-kva.example/cb',
    })
  })

  it('still applies every other rule to the converted URI', () => {
    expect(validateRegisteredRedirectUri('http://bücher.example/cb')).toMatchObject({ ok: false, reason: expect.stringMatching(/https/) })
    expect(validateRegisteredRedirectUri('https://bücher.example/cb?code=1')).toMatchObject({ ok: false })
    expect(validateRegisteredRedirectUri('https://bücher.example./cb')).toMatchObject({ ok: false })
  })

  it('matches the stored form, which is what clients send; a sent Unicode host is refused', () => {
    const stored = ['https://xn--bcher-kva.example/cb']
    expect(matches(new URL('https://bücher.example/cb/x').href, stored)).toBe(true)
    expect(matches('https://bücher.example/cb', stored)).toBe(false)
  })

  it('shows a stored ASCII host in Unicode', () => {
    expect(unicodeHostOf('https://xn--bcher-kva.example/cb')).toBe('bücher.example')
    expect(unicodeHostOf('https://app.example.com/cb')).toBeNull()
    expect(unicodeHostOf('com.example.app:/cb')).toBeNull()
  })
})

describe('buildRedirect', () => {
  it('adds a query to a URI without one', () => {
    expect(buildRedirect('https://a.example/cb', { code: 'c1', state: 's 1' }, 'query')).toBe('https://a.example/cb?code=c1&state=s+1')
  })
  it('keeps an existing query (RFC 6749 3.1.2)', () => {
    expect(buildRedirect('https://a.example/cb?tab=2', { code: 'c1' }, 'query')).toBe('https://a.example/cb?tab=2&code=c1')
    expect(buildRedirect('https://a.example/cb?', { code: 'c1' }, 'query')).toBe('https://a.example/cb?code=c1')
  })
  it('skips undefined values and encodes the rest', () => {
    const url = buildRedirect('https://a.example/cb', { code: 'c', state: undefined, iss: 'https://as.example' }, 'query')
    expect(url).toBe('https://a.example/cb?code=c&iss=https%3A%2F%2Fas.example')
    expect(new URL(url).searchParams.get('iss')).toBe('https://as.example')
  })
  it('puts the token flow response in the fragment, leaving the query alone', () => {
    const url = buildRedirect('https://a.example/cb?x=1', { access_token: 't', token_type: 'Bearer', state: '&=#' }, 'fragment')
    expect(url).toBe('https://a.example/cb?x=1#access_token=t&token_type=Bearer&state=%26%3D%23')
    expect(new URLSearchParams(new URL(url).hash.slice(1)).get('state')).toBe('&=#')
  })
})

describe('percent-encoding that is not an attack', () => {
  it('allows an encoded percent sign in the path and query', () => {
    expect(matches('https://app.example.com/cb/100%25?discount=50%25', REG)).toBe(true)
  })
})

describe('describeRedirectTarget', () => {
  it('names the host and the CSP source of the redirect', () => {
    expect(describeRedirectTarget('https://App.example.com/cb?x=1')).toEqual({
      host: 'app.example.com',
      cspSource: 'https://app.example.com:443',
    })
    expect(describeRedirectTarget('http://127.0.0.1:5123/cb')).toEqual({ host: '127.0.0.1:5123', cspSource: 'http://127.0.0.1:5123' })
    expect(describeRedirectTarget('com.example.app:/cb')).toEqual({ host: 'com.example.app:', cspSource: 'com.example.app:' })
  })
})
