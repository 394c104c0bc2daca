import { domainToASCII, domainToUnicode } from 'node:url'

/*
 * Redirect URI registration and matching (docs/decisions/001-redirect-uri-matching.md, RFC 6749 3.1.2,
 * RFC 8252 7, RFC 9700 4.1).
 *
 * Everything works on the raw string with a small RFC 3986 splitter of our own. WHATWG `new URL`
 * resolves dot segments, decodes some escapes and lowercases hosts, so a check made after it
 * would approve a string that is not the one the browser is later sent to. The URI we redirect
 * to is always the sent string, byte for byte, once it has passed these checks.
 */

export const MAX_REDIRECT_URI_LENGTH = 2048

/**
 * Every parameter an authorization response or error can carry, so a client query must not
 * pre-set any of them: RFC 6749 4.1.2 (code, state), 4.1.2.1 and 4.2.2.1 (error,
 * error_description, error_uri), 4.2.2 and 5.1 (access_token, token_type, expires_in, scope,
 * refresh_token) and RFC 9207 2 (iss). A pre-set one lets an attacker plant a value the client
 * may read instead of, or as well as, the server's.
 */
export const RESPONSE_PARAMETERS: ReadonlySet<string> = new Set([
  'code',
  'state',
  'iss',
  'error',
  'error_description',
  'error_uri',
  'access_token',
  'token_type',
  'expires_in',
  'scope',
  'refresh_token',
])

const FORBIDDEN_SCHEMES = new Set(['javascript', 'data', 'file', 'vbscript', 'blob', 'about', 'filesystem'])
const LOOPBACK_IPS = new Set(['127.0.0.1', '[::1]'])
const DEFAULT_PORTS: Record<string, string> = { https: '443', http: '80' }

interface ParsedUri {
  scheme: string
  /** null when the URI has no `//` authority (private-use schemes such as `com.example.app:/cb`). */
  host: string | null
  /** Effective port: explicit, else the scheme's default, else ''. */
  port: string
  path: string
  query: string | null
}

type Parsed = { ok: true; uri: ParsedUri } | { ok: false; reason: string }

/** RFC 3986 appendix B, anchored; the fragment is rejected before this runs. */
const URI_SHAPE = /^([A-Za-z][A-Za-z0-9+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?$/
const REG_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/
const IP_LITERAL = /^\[[0-9a-f:.]+\]$/

function parse(raw: string): Parsed {
  if (raw.length === 0) return { ok: false, reason: 'must not be empty' }
  if (raw.length > MAX_REDIRECT_URI_LENGTH) return { ok: false, reason: `must be at most ${MAX_REDIRECT_URI_LENGTH} characters` }
  // Printable ASCII only: whitespace, control characters (CR/LF header splitting, NUL) and
  // unencoded Unicode never belong in a redirect URI.
  if (!/^[\x21-\x7e]+$/.test(raw)) return { ok: false, reason: 'must not contain spaces, control characters or non-ASCII characters' }
  if (raw.includes('#')) return { ok: false, reason: 'must not contain a fragment (#…)' }
  if (raw.includes('\\')) return { ok: false, reason: 'must not contain a backslash' }
  if (raw.includes('*')) return { ok: false, reason: 'must not contain wildcards (*)' }

  const m = URI_SHAPE.exec(raw)
  if (!m) return { ok: false, reason: 'must be an absolute URI such as https://example.com/callback' }
  const scheme = m[1]!.toLowerCase()
  const authority = m[2]
  const path = m[3]!
  const query = m[4] ?? null

  let host: string | null = null
  let port = DEFAULT_PORTS[scheme] ?? ''
  if (authority !== undefined) {
    if (authority.includes('@')) return { ok: false, reason: 'must not contain user information (user@host)' }
    const hp = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/.exec(authority)
    if (!hp) return { ok: false, reason: 'has an invalid host or port' }
    host = hp[1]!.toLowerCase()
    if (host === '') return { ok: false, reason: 'must name a host' }
    if (host.endsWith('.')) return { ok: false, reason: 'must not end the host name with a dot' }
    if (!REG_NAME.test(host) && !IP_LITERAL.test(host)) return { ok: false, reason: 'has an invalid host name' }
    if (hp[2] !== undefined && hp[2] !== '') {
      const n = Number(hp[2])
      if (hp[2].length > 5 || n < 1 || n > 65535) return { ok: false, reason: 'has an invalid port' }
      port = String(n)
    }
  }
  if (host !== null && path !== '' && !path.startsWith('/')) return { ok: false, reason: 'has an invalid path' }

  const pathProblem = checkPath(path)
  if (pathProblem) return { ok: false, reason: pathProblem }
  return { ok: true, uri: { scheme, host, port, path: host !== null && path === '' ? '/' : path, query } }
}

/**
 * Decodes percent-escapes until nothing changes, so `%252e` is seen as `.` however many times
 * some layer downstream decodes it. Byte-wise and lenient on purpose: only ASCII results
 * (dots, slashes, controls) matter here. Returns null when the raw string has a malformed escape.
 */
function decodeFully(s: string): string | null {
  if (/%(?![0-9A-Fa-f]{2})/.test(s)) return null
  let current = s
  for (let i = 0; i < 10; i++) {
    const next = current.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    if (next === current) return current
    current = next
  }
  return current
}

/** Dot segments and encoded separators let a path escape its registered prefix (RFC 9700 4.1.3). */
function checkPath(path: string): string | null {
  for (const segment of path.split('/')) {
    const decoded = decodeFully(segment)
    if (decoded === null) return 'has an invalid percent-encoding in the path'
    // `..;` counts too: some servers (Tomcat, Spring) strip `;params` before resolving.
    const bare = decoded.split(';', 1)[0]
    if (bare === '.' || bare === '..') return 'must not contain dot segments (/./ or /../), plain or percent-encoded'
    if (decoded.includes('/') || decoded.includes('\\')) return 'must not contain an encoded slash or backslash (%2F, %5C)'
    if (/[\x00-\x20\x7f]/.test(decoded)) return 'must not contain encoded control characters or spaces'
  }
  return null
}

/**
 * Names of the query's parameters, fully decoded, as the most lenient reader would see them:
 * `;` separates like `&` (RFC 3986 3.4 leaves the syntax to the application, and many servers
 * split on both); so do `&` and `;` that appear only after decoding, for clients that decode
 * the whole query before splitting it. Null if an escape is malformed.
 */
function queryKeys(query: string): string[] | null {
  const keys: string[] = []
  const decodedQuery = decodeFully(query)
  if (decodedQuery === null) return null
  for (const source of [query, decodedQuery]) {
    for (const pair of source.split(/[&;]/)) {
      if (pair === '') continue
      const eq = pair.indexOf('=')
      const key = decodeFully((eq === -1 ? pair : pair.slice(0, eq)).replace(/\+/g, ' '))
      if (key === null) return null
      keys.push(key)
    }
  }
  return keys
}

/**
 * The parameter a framework may take a query key for: case-folded (lookups that ignore case),
 * trimmed, without an array suffix (`code[]`, `state[x]` in PHP and Rails), with `.`, `-` and
 * spaces read as `_` (PHP turns `.` and spaces in names into `_`).
 */
function canonicalKey(key: string): string {
  return key
    .trim()
    .toLowerCase()
    .replace(/\[.*$/, '')
    .replace(/[.\- ]/g, '_')
}

const SHOWN_KEY_MAX = 40

function queryProblem(query: string | null): string | null {
  if (query === null) return null
  const keys = queryKeys(query)
  if (keys === null) return 'has an invalid percent-encoding in the query'
  const clash = keys.find((k) => RESPONSE_PARAMETERS.has(canonicalKey(k)))
  if (clash === undefined) return null
  const name = canonicalKey(clash)
  const shown = clash.length > SHOWN_KEY_MAX ? `${clash.slice(0, SHOWN_KEY_MAX)}…` : clash
  const as = shown === name ? '' : ` (read as ${name})`
  return `must not set the query parameter "${shown}"${as}, which the server adds to the response`
}

export type RedirectUriCheck =
  | {
      ok: true
      /** What to store: the URI as typed, with an internationalised host in its ASCII form. */
      uri: string
      /** Set when the host was converted: the host as typed and as stored. */
      idn?: { typed: string; stored: string }
    }
  | { ok: false; reason: string }

const NON_ASCII = /[^\x00-\x7f]/
const AUTHORITY_FIRST = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#\\]*)(.*)$/s

/**
 * A registered URI whose host is an internationalised domain name (`https://bücher.example/cb`)
 * is stored with the host in its ASCII form (`xn--bcher-kva.example`, IDNA 2008 with UTS #46
 * mapping via WHATWG's domainToASCII): that is the name a browser looks up and the form a
 * client's URL library sends, and it keeps the rule that a redirect URI is printable ASCII,
 * which the Location header needs. Only the host may be non-ASCII; the rest is percent-encoded.
 */
function withAsciiHost(raw: string): { uri: string; idn?: { typed: string; stored: string } } | { reason: string } {
  if (!NON_ASCII.test(raw)) return { uri: raw }
  const m = AUTHORITY_FIRST.exec(raw)
  const authority = m?.[2] ?? ''
  const hp = /^([^@:[\]]+)(:\d*)?$/.exec(authority)
  if (!m || !hp || !NON_ASCII.test(hp[1]!) || NON_ASCII.test(m[1]! + m[3]!)) {
    return { reason: 'may contain non-ASCII characters only in the host name; percent-encode them in the path and query' }
  }
  const typed = hp[1]!
  const stored = domainToASCII(typed)
  if (stored === '') return { reason: 'has a host name that is not a valid internationalised domain name' }
  return { uri: `${m[1]}${stored}${hp[2] ?? ''}${m[3]}`, idn: { typed, stored } }
}

/**
 * Checks a redirect URI a user registers in the console. Reasons are written for the form:
 * "Redirect URI <reason>". Accepts https, http only for loopback and localhost (RFC 8252 7.3),
 * and private-use schemes in reverse-domain form with a single slash (RFC 8252 7.1).
 */
export function validateRegisteredRedirectUri(typed: string): RedirectUriCheck {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(typed)?.[1]?.toLowerCase()
  if (scheme && FORBIDDEN_SCHEMES.has(scheme)) return { ok: false, reason: `must not use the ${scheme}: scheme` }
  // RFC 8252 7.1: "com.example.app:/oauth2redirect/example-provider". With `//` the part after
  // the scheme is an authority (RFC 3986 3.2) that apps and browsers read differently.
  if (scheme?.includes('.') && typed.startsWith('//', scheme.length + 1)) {
    return {
      ok: false,
      reason: `must have a single slash after a private-use scheme, as in ${scheme}:/callback, not ${scheme}://callback (RFC 8252 7.1)`,
    }
  }
  const converted = withAsciiHost(typed)
  if ('reason' in converted) return { ok: false, reason: converted.reason }
  const raw = converted.uri
  const parsed = parse(raw)
  if (!parsed.ok) return parsed
  const { uri } = parsed
  if (uri.scheme === 'http') {
    if (uri.host !== 'localhost' && !LOOPBACK_IPS.has(uri.host ?? '')) {
      return { ok: false, reason: 'must use https (http is allowed only for localhost, 127.0.0.1 and [::1])' }
    }
  } else if (uri.scheme === 'https') {
    if (uri.host === null) return { ok: false, reason: 'must name a host, as in https://example.com/callback' }
  } else if (!uri.scheme.includes('.')) {
    return { ok: false, reason: 'must use https, or a private-use scheme with a dot such as com.example.app:/callback' }
  } else if (!uri.path.startsWith('/')) {
    return { ok: false, reason: 'must have a path starting with /, as in com.example.app:/callback' }
  }
  // An `xn--` label that does not decode is a name no browser will look up (WHATWG URL host parsing).
  if (uri.host !== null && hasPunycodeLabel(uri.host) && domainToASCII(uri.host) !== uri.host) {
    return { ok: false, reason: 'has a host name with an invalid xn-- (punycode) label' }
  }
  const q = queryProblem(uri.query)
  if (q) return { ok: false, reason: q }
  return converted.idn ? { ok: true, uri: raw, idn: converted.idn } : { ok: true, uri: raw }
}

function hasPunycodeLabel(host: string): boolean {
  return host.split('.').some((label) => label.startsWith('xn--'))
}

/**
 * For showing a stored URI: its host in Unicode when it is an internationalised domain name
 * stored in ASCII form (a label starting with `xn--`), else null.
 */
export function unicodeHostOf(uri: string): string | null {
  const parsed = parse(uri)
  const host = parsed.ok ? parsed.uri.host : null
  if (host === null || !hasPunycodeLabel(host)) return null
  const unicode = domainToUnicode(host)
  return unicode !== '' && unicode !== host ? unicode : null
}

function pathCovers(registered: string, sent: string): boolean {
  if (sent === registered) return true
  const prefix = registered.endsWith('/') ? registered : `${registered}/`
  return sent.startsWith(prefix)
}

function covers(reg: ParsedUri, sent: ParsedUri): boolean {
  if (reg.scheme !== sent.scheme || reg.host !== sent.host) return false
  // RFC 8252 7.3: native apps listen on an ephemeral port of a loopback IP literal. Not for
  // `localhost`, whose resolution the server cannot vouch for (RFC 8252 8.3).
  const anyPort = reg.scheme === 'http' && LOOPBACK_IPS.has(reg.host ?? '')
  if (!anyPort && reg.port !== sent.port) return false
  if (!pathCovers(reg.path, sent.path)) return false
  // A registered query is part of the registration: the sent one must repeat it exactly.
  if (reg.query !== null && sent.query !== reg.query) return false
  return true
}

/**
 * The registered URI that covers `sent` ("subpath" rule), or null. The sent URI is rejected
 * outright when it carries anything that could make the browser land somewhere the check did
 * not look at: userinfo, fragments, dot segments, encoded separators, control characters.
 */
export function findMatchingRedirectUri(sent: string, registered: readonly string[]): string | null {
  const parsed = parse(sent)
  if (!parsed.ok || queryProblem(parsed.uri.query)) return null
  for (const candidate of registered) {
    const reg = parse(candidate)
    if (reg.ok && covers(reg.uri, parsed.uri)) return candidate
  }
  return null
}

export function matchRedirectUri(sent: string, registered: readonly string[]): boolean {
  return findMatchingRedirectUri(sent, registered) !== null
}

/**
 * Appends response parameters to a validated redirect URI, keeping its own query
 * (RFC 6749 3.1.2: "MUST retain the query component"). `fragment` is for the token flow
 * (RFC 6749 4.2.2); the URI never has a fragment of its own, matching refuses those.
 */
export function buildRedirect(uri: string, params: Record<string, string | undefined>, mode: 'query' | 'fragment'): string {
  const encoded = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined) encoded.append(k, v)
  const tail = encoded.toString()
  if (mode === 'fragment') return `${uri}#${tail}`
  if (!uri.includes('?')) return `${uri}?${tail}`
  return uri.endsWith('?') || uri.endsWith('&') ? `${uri}${tail}` : `${uri}&${tail}`
}

/**
 * What the consent page shows as "you will be sent to", and the CSP source that lets the
 * consent form's redirect reach it (form-action applies to redirects after a form POST).
 * Only call with a URI that matched a registration.
 */
export function describeRedirectTarget(uri: string): { host: string; cspSource: string } {
  const parsed = parse(uri)
  if (!parsed.ok) throw new Error('describeRedirectTarget needs a validated redirect URI')
  const { scheme, host, port } = parsed.uri
  if (scheme !== 'http' && scheme !== 'https') return { host: host ?? `${scheme}:`, cspSource: `${scheme}:` }
  const shownPort = port === DEFAULT_PORTS[scheme] ? '' : `:${port}`
  return { host: `${host}${shownPort}`, cspSource: `${scheme}://${host}:${port}` }
}
