/*
 * Redirect URI parsing and matching (registration: redirect-uri-registration.ts; docs/decisions/001-redirect-uri-matching.md, RFC 6749 3.1.2,
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
 * refresh_token), RFC 9207 2 (iss) and OpenID Connect Core 3.2.2.5 (id_token). A pre-set one
 * lets an attacker plant a value the client may read instead of, or as well as, the server's.
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
  'id_token',
])

export const FORBIDDEN_SCHEMES = new Set(['javascript', 'data', 'file', 'vbscript', 'blob', 'about', 'filesystem'])
export const LOOPBACK_IPS = new Set(['127.0.0.1', '[::1]'])
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

export function parse(raw: string): Parsed {
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

export function queryProblem(query: string | null): string | null {
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

function pathCovers(registered: string, sent: string): boolean {
  if (sent === registered) return true
  const prefix = registered.endsWith('/') ? registered : `${registered}/`
  return sent.startsWith(prefix)
}

/**
 * RFC 8252 7.3: native apps listen on an ephemeral port of a loopback IP literal. Not for
 * `localhost`, whose resolution the server cannot vouch for (RFC 8252 8.3).
 */
function anyPort(reg: ParsedUri): boolean {
  return reg.scheme === 'http' && LOOPBACK_IPS.has(reg.host ?? '')
}

function covers(reg: ParsedUri, sent: ParsedUri): boolean {
  if (reg.scheme !== sent.scheme || reg.host !== sent.host) return false
  if (!anyPort(reg) && reg.port !== sent.port) return false
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
export function findMatchingRedirectUri(sent: string, registered: readonly string[], exact = false): string | null {
  const parsed = parse(sent)
  if (!parsed.ok || queryProblem(parsed.uri.query)) return null
  for (const candidate of registered) {
    if (exact && sent === candidate) return candidate
    const reg = parse(candidate)
    if (reg.ok && (exact ? samePortAside(reg.uri, parsed.uri) : covers(reg.uri, parsed.uri))) return candidate
  }
  return null
}

/**
 * `exact` matching, for a client of a metadata document, whose redirect URIs are exactly those its
 * document lists (docs/decisions/026-client-metadata-documents.md): no sub-path, no other query;
 * only a loopback IP literal's port may differ (RFC 8252 7.3).
 */
function samePortAside(reg: ParsedUri, sent: ParsedUri): boolean {
  return anyPort(reg) && reg.scheme === sent.scheme && reg.host === sent.host && reg.path === sent.path && reg.query === sent.query
}

/**
 * How a response travels to the redirect URI (OAuth 2.0 Multiple Response Type Encoding
 * Practices 2.1; OAuth 2.0 Form Post Response Mode 2): in the query, in the fragment, or posted
 * by an HTML form in the user's browser.
 */
export type ResponseMode = 'query' | 'fragment' | 'form_post'

/** A response for the client (RFC 6749 4.1.2, 4.2.2 and their errors), before its mode encodes it. */
export interface ClientResponse {
  /** Validated and registered (src/oauth/authorize/authorize-request.ts, establishClient). */
  readonly redirectUri: string
  readonly mode: ResponseMode
  /** Absent values are left out. */
  readonly params: Readonly<Record<string, string>>
}

export function clientResponse(redirectUri: string, params: Record<string, string | undefined>, mode: ResponseMode): ClientResponse {
  const present: Record<string, string> = {}
  for (const [k, v] of Object.entries(params)) if (v !== undefined) present[k] = v
  return { redirectUri, mode, params: present }
}

/**
 * The URL a query or fragment response redirects to. A form_post response is a page
 * (views/oauth/form-post.eta), never a URL: its parameters must not reach the query, where
 * logs and Referer headers would keep them.
 */
export function responseLocation(response: ClientResponse): string {
  if (response.mode === 'form_post') throw new Error('a form_post response is a page, not a redirect')
  return buildRedirect(response.redirectUri, response.params, response.mode)
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
