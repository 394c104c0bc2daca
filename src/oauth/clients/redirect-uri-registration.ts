import { domainToASCII, domainToUnicode } from 'node:url'
import punycode from 'punycode/punycode.js'
import { FORBIDDEN_SCHEMES, LOOPBACK_IPS, parse, queryProblem } from './redirect-uri.js'

/*
 * Redirect URIs as developers register them in the console: which schemes and hosts are
 * accepted (RFC 8252 7.1, 7.3; docs/decisions/001-redirect-uri-matching.md), and the ASCII
 * form an internationalised host is stored in. Matching at /oauth/authorize is in redirect-uri.ts.
 */

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
  // An `xn--` label that does not decode is a name no browser will look up (WHATWG URL host
  // parsing); the whole host must also be what the parser keeps (a last label of digits is not).
  if (uri.host !== null && hasPunycodeLabel(uri.host) && (!punycodeLabelsValid(uri.host) || domainToASCII(uri.host) !== uri.host)) {
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
 * Whether each `xn--` label of `host` is the ASCII form of a valid label: it decodes (RFC 3492)
 * to a label that UTS #46 (WHATWG's domainToASCII) turns back into exactly it, so it is neither
 * garbage nor a second spelling. Decoded here rather than left to the URL parser, since Node 24's
 * accepts `xn--` labels that do not decode at all (`xn--zz`) or decode to what is disallowed.
 */
function punycodeLabelsValid(host: string): boolean {
  return host.split('.').every((label) => {
    if (!label.startsWith('xn--')) return true
    let unicode: string
    try {
      unicode = punycode.decode(label.slice(4))
    } catch {
      return false
    }
    return unicode !== '' && domainToASCII(unicode) === label
  })
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
