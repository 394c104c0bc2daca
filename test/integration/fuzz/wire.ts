import fc from 'fast-check'

/*
 * Generators of hostile HTTP requests, at the level of the wire: what a client can put into a
 * request that Node's HTTP parser still hands to Gatehouse. Node refuses raw control characters
 * and raw non-ASCII bytes in the request target, and control characters other than tab in header
 * values (400 before any application code runs), so those arrive only percent-encoded in the URL
 * and in bodies, which carry any bytes at all. Header values may carry Latin-1 bytes (obs-text).
 */

export const FORM = 'application/x-www-form-urlencoded'

/**
 * Any code point but a lone surrogate: fc.string's 'binary' unit, drawn the same way (the same
 * cases under a seed), without the map from each of its 1.1 million characters back to its index
 * that fast-check builds for that unit (seconds of CPU per test process) and the fuzz never needs.
 */
const anyCodePoint = fc.integer({ min: 0, max: 0x10ffff - 0x800 }).map((i) => String.fromCodePoint(i < 0xd800 ? i : i + 0x800))

/** One character of decoded text: mostly printable ASCII, often a control character (NUL included) or something odder. */
const textChar: fc.Arbitrary<string> = fc.oneof(
  { weight: 10, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)) },
  // NUL on its own: PostgreSQL refuses it in text, so it is the control character most likely to reach a 500.
  { weight: 2, arbitrary: fc.constant('\u0000') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      ...['\u007f', '\u0080', '\u0085', '\u009f', '\u00a0', '\u00e9', '\u00ff', '\u0130', '\u200b', '\u2028', '\u202e', '\ufeff'],
      ...['\ufffd', '\uffff', '\u4e00', '\ud800', '\udc00', '\u{1f600}', '"', "'", '\\', '<', '>', '&', '=', '%', '+', ';', '#'],
      ...['?', '/', ' ', '`', '\r\n'],
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: anyCodePoint, minLength: 1, maxLength: 1 }) },
)

/** Decoded text of any kind. */
export const text = (maxLength = 24): fc.Arbitrary<string> => fc.string({ unit: textChar, maxLength })

const UNRESERVED = /^[A-Za-z0-9\-._~]$/

/** Percent-encodes every byte outside RFC 3986's unreserved set. */
export function encodeBytes(bytes: Uint8Array): string {
  let out = ''
  for (const b of bytes) {
    const c = String.fromCharCode(b)
    out += UNRESERVED.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}

/** Text as a client encodes it into a query or form: UTF-8, percent-encoded. */
export const encodeText = (s: string): string => encodeBytes(Buffer.from(s, 'utf8'))

/** Pieces no correct encoder produces: invalid percent-encoding, truncated or overlong UTF-8, encoded surrogates, separators. */
const RAW_FRAGMENTS = [
  ...['%zz', '%C3', '%', '%%', '%2', '%E4%B8', '%ED%A0%80', '%C0%AF', '%C0%80', '%F4%90%80%80', '%FF', '%FE%FF', '%00', '%u0041'],
  ...['+', '%2B', '%26', '%3D', '%3B', '&', '=', ';', '[]', '[0]', '[a][b]', '.', '..', '%2e%2e', '%2F', '%5C', '__proto__'],
  ...['constructor', '%0D%0A', '%0A', '%09', '%7F', '%C2%85', '%E2%80%A8'],
]

/** Printable ASCII as it may stand raw in a query (no `#`, which ends the request target's query for every parser). */
const rawQueryChar = fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c === 0x23 ? 0x40 : c))

/** A stretch of the request target as a client may write it by hand, broken encodings included. */
export const rawChunk: fc.Arbitrary<string> = fc.string({
  unit: fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...RAW_FRAGMENTS) }, { weight: 3, arbitrary: rawQueryChar }),
  minLength: 1,
  maxLength: 8,
})

/** A value far past any sane length: around and beyond the 64 KiB body limit (`max`), made by repetition so it is cheap. */
export const hugeValue = (max: number): fc.Arbitrary<string> =>
  fc
    .tuple(fc.constantFrom('a', '%00', '%C3%A9', '%zz', '%FF', 'A%2B', '%E4%B8%80'), fc.integer({ min: 1000, max }))
    .map(([unit, length]) => unit.repeat(Math.ceil(length / unit.length)).slice(0, length))

/** A parameter value on the wire, from `known` (decoded values the route understands) or from anywhere. */
export function wireValue(known: fc.Arbitrary<string>, hugeMax: number): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: known.map(encodeText) },
    { weight: 4, arbitrary: text().map(encodeText) },
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: 16 }).map(encodeBytes) },
    { weight: 2, arbitrary: rawChunk },
    { weight: 1, arbitrary: fc.tuple(known, rawChunk).map(([k, raw]) => encodeText(k) + raw) },
    // A plausible value with one bad byte in it: what gets furthest before something has to refuse it.
    {
      weight: 3,
      arbitrary: fc
        .tuple(known, fc.nat(), fc.constantFrom('%00', '%00', '%0A', '%1B', '%7F', '%C2%80', '%FF', '%C3', '%zz', '%E2%80%AE'))
        .map(([k, at, bad]) => {
          const encoded = encodeText(k)
          // Between two escapes or characters, never inside one.
          const cuts = [0, ...[...encoded.matchAll(/%[0-9A-F]{2}|./g)].map((m) => m.index + m[0].length)]
          const cut = cuts[at % cuts.length]!
          return encoded.slice(0, cut) + bad + encoded.slice(cut)
        }),
    },
    { weight: 1, arbitrary: hugeValue(hugeMax) },
  )
}

/** A parameter name on the wire: one the route reads, or another, spelled as parsers may or may not fold it. */
export function wireName(names: readonly string[]): fc.Arbitrary<string> {
  const name = fc.oneof(
    { weight: 12, arbitrary: fc.constantFrom(...names) },
    { weight: 2, arbitrary: text(10) },
    { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'hasOwnProperty', 'toString', 'then', '') },
  )
  return fc.oneof(
    { weight: 12, arbitrary: name.map(encodeText) },
    { weight: 1, arbitrary: name.map((n) => `${encodeText(n)}[]`) },
    { weight: 1, arbitrary: name.map((n) => `${encodeText(n)}[0]`) },
    { weight: 1, arbitrary: name.map((n) => `${encodeText(n)}[x]`) },
    { weight: 1, arbitrary: name.map((n) => encodeText(n.toUpperCase())) },
    { weight: 1, arbitrary: name.map((n) => [...Buffer.from(n)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')) },
    { weight: 1, arbitrary: name.map((n) => `${encodeText(n)}%00`) },
    { weight: 1, arbitrary: name.map((n) => `+${encodeText(n)}`) },
  )
}

/** What becomes of one expected parameter in a generated request. */
type Fate = 'plain' | 'hostile' | 'drop' | 'twice' | 'array'
/** `plain`: how often a parameter is sent as the route's own clients send it, against 8 for all the rest. */
const fate = (plain: number): fc.Arbitrary<Fate> =>
  fc.oneof(
    { weight: plain, arbitrary: fc.constant('plain' as const) },
    { weight: 3, arbitrary: fc.constant('hostile' as const) },
    { weight: 2, arbitrary: fc.constant('drop' as const) },
    { weight: 2, arbitrary: fc.constant('twice' as const) },
    { weight: 1, arbitrary: fc.constant('array' as const) },
  )

/** The parameters a route reads, each with the decoded values that take a request deep into it. */
export type Template = Readonly<Record<string, fc.Arbitrary<string>>>

/**
 * A query string or form body: either the route's own parameters (mostly plausible, some
 * hostile, dropped, repeated or sent as arrays) plus strays, or nothing but strays. Pairs are
 * joined by `&`, now and then by `;` or `&&`. `calm`: the route's parameters only, nearly all of
 * them plain, so that most such requests are valid but for one thing and reach deep.
 */
export function wireParams(template: Template, hugeMax: number, calm = false): fc.Arbitrary<string> {
  const names = Object.keys(template)
  const anyKnown = names.length > 0 ? fc.oneof(...names.map((n) => template[n]!)) : text()
  const nameList = names.length > 0 ? names : ['x']
  const stray = fc.oneof(
    { weight: 8, arbitrary: fc.tuple(wireName(nameList), wireValue(anyKnown, hugeMax)).map(([n, v]) => `${n}=${v}`) },
    { weight: 1, arbitrary: wireName(nameList) },
    { weight: 1, arbitrary: rawChunk },
  )
  const fields = fc.tuple(
    ...names.map((name) =>
      fc.tuple(fate(calm ? 80 : 20), template[name]!.map(encodeText), wireValue(template[name]!, hugeMax)).map(([f, plain, hostile]) => {
        const n = encodeText(name)
        switch (f) {
          case 'plain':
            return [`${n}=${plain}`]
          case 'hostile':
            return [`${n}=${hostile}`]
          case 'drop':
            return []
          case 'twice':
            return [`${n}=${plain}`, `${n}=${hostile}`]
          case 'array':
            return [`${n}[]=${plain}`]
        }
      }),
    ),
  )
  const fromTemplate = fc.tuple(fields, fc.array(stray, { maxLength: 2 })).map(([parts, extra]) => [...parts.flat(), ...extra])
  if (calm) return fields.map((parts) => parts.flat().join('&'))
  const onlyStrays = fc.array(stray, { maxLength: 8 })
  const separator = fc.oneof({ weight: 10, arbitrary: fc.constant('&') }, { weight: 1, arbitrary: fc.constantFrom(';', '&&', '&amp;') })
  return fc
    .tuple(fc.oneof({ weight: 4, arbitrary: fromTemplate }, { weight: 1, arbitrary: onlyStrays }), separator)
    .map(([pairs, sep]) => pairs.join(sep))
}

/** A JSON value of any shape: what a client may send where parameters are expected. */
const jsonish: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: text() },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom(null, 0, -1, 1e308, true, [], {}, [''], { a: 'b' }) },
)

/** A request body and its declared type (undefined: no Content-Type header). */
export interface WireBody {
  contentType: string | undefined
  payload: string | Buffer | undefined
}

const CONTENT_TYPES: ReadonlyArray<string | undefined> = [
  undefined,
  FORM,
  `${FORM}; charset=utf-8`,
  `${FORM}; charset=iso-8859-1`,
  'APPLICATION/X-WWW-FORM-URLENCODED',
  'application/json',
  'application/json; charset=utf-16',
  'application/vnd.api+json',
  'text/plain',
  'text/html',
  'multipart/form-data; boundary=xyz',
  'multipart/form-data',
  'application/octet-stream',
  'application/x-www-form-urlencoded, application/json',
  '',
  ';',
  'garbage',
  '*/*',
]

/**
 * Bodies of every kind: the route's parameters form-encoded (raw invalid UTF-8 spliced in, now
 * and then, or thousands of parameters after them), as JSON objects of any values, JSON of any
 * other shape or nested thousands deep, malformed JSON, random bytes, nothing, and bodies around
 * and beyond the 64 KiB limit. A quarter get a declared type
 * other than their own, or none.
 */
export function wireBody(template: Template): fc.Arbitrary<WireBody> {
  const form = wireParams(template, 70_000)
  const names = Object.keys(template)
  const jsonObject = fc.tuple(
    fc.tuple(...names.map((n) => fc.option(fc.oneof({ weight: 3, arbitrary: template[n]! as fc.Arbitrary<unknown> }, jsonish)))),
    fc.dictionary(text(10), jsonish, { maxKeys: 3 }),
  )
  const body: fc.Arbitrary<WireBody> = fc.oneof(
    { weight: 8, arbitrary: form.map((payload) => ({ contentType: FORM, payload })) },
    {
      weight: 1,
      arbitrary: fc.tuple(form, fc.uint8Array({ minLength: 1, maxLength: 8 })).map(([f, bytes]) => ({
        contentType: FORM,
        payload: Buffer.concat([Buffer.from(`${f}&${names[0] ?? 'x'}=`), bytes]),
      })),
    },
    {
      weight: 3,
      arbitrary: jsonObject.map(([values, extra]) => {
        const object: Record<string, unknown> = { ...extra }
        names.forEach((n, i) => {
          if (values[i] !== null) object[n] = values[i]
        })
        return { contentType: 'application/json', payload: JSON.stringify(object) }
      }),
    },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => ({ contentType: 'application/json', payload: JSON.stringify(v) })) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('{', '{"a":', '[1,', 'nul', '"\\ud800"', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}', '\ufeff{}')
        .map((payload) => ({ contentType: 'application/json', payload })),
    },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => ({ contentType: FORM, payload: Buffer.from(bytes) })) },
    // Thousands of parameters, one name repeated or all distinct, after the route's own.
    {
      weight: 1,
      arbitrary: fc.tuple(form, fc.constantFrom(300, 3000, 8000), fc.boolean()).map(([f, n, same]) => ({
        contentType: FORM,
        payload: `${f}&${Array.from({ length: n }, (_, i) => (same ? 'x=1' : `k${i}=1`)).join('&')}`.slice(0, 65_536),
      })),
    },
    // JSON nested thousands deep, within the body limit.
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('['.repeat(30_000) + ']'.repeat(30_000), '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000))
        .map((payload) => ({ contentType: 'application/json', payload })),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(65_535, 65_536, 65_537, 100_000)
        .map((size) => ({ contentType: FORM, payload: `${names[0] ?? 'x'}=${'a'.repeat(size - (names[0] ?? 'x').length - 1)}` })),
    },
    { weight: 1, arbitrary: fc.constantFrom<WireBody>({ contentType: undefined, payload: undefined }, { contentType: FORM, payload: '' }) },
  )
  const otherType = fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom(...CONTENT_TYPES) })
  return fc.tuple(body, otherType).map(([b, other]) => (other === null ? b : { ...b, contentType: other }))
}

/** A header value Node's parser accepts: printable ASCII, spaces and tabs inside, Latin-1 bytes; trimmed as Node trims it. */
export const headerText = (maxLength = 40): fc.Arbitrary<string> =>
  fc
    .string({
      unit: fc.oneof(
        { weight: 10, arbitrary: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) },
        { weight: 1, arbitrary: fc.constant('\t') },
        { weight: 2, arbitrary: fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c)) },
      ),
      maxLength,
    })
    .map((s) => s.replace(/^[ \t]+|[ \t]+$/g, ''))

/** Base64 of bytes, as Basic credentials are sent. */
export const base64 = (bytes: Uint8Array | string): string => Buffer.from(bytes).toString('base64')

/**
 * An Authorization header: HTTP Basic with `clientIds`/`secrets` (real ones let a request past
 * client authentication) encoded well or badly, Basic over random bytes (not UTF-8, no colon),
 * Bearer with `tokens` or garbage, and headers of no known scheme.
 */
export function authorizationHeader(clientIds: fc.Arbitrary<string>, secrets: fc.Arbitrary<string>, tokens: fc.Arbitrary<string>) {
  const id = fc.oneof({ weight: 3, arbitrary: clientIds }, { weight: 1, arbitrary: text() })
  const secret = fc.oneof({ weight: 3, arbitrary: secrets }, { weight: 1, arbitrary: text() })
  return fc.oneof(
    { weight: 4, arbitrary: fc.tuple(id, secret).map(([i, s]) => `Basic ${base64(`${encodeText(i)}:${encodeText(s)}`)}`) },
    { weight: 2, arbitrary: fc.tuple(id, secret).map(([i, s]) => `Basic ${base64(`${i}:${s}`)}`) },
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: 40 }).map((b) => `Basic ${base64(b)}`) },
    { weight: 1, arbitrary: headerText().map((h) => `Basic ${h}`) },
    { weight: 3, arbitrary: tokens.map((t) => `Bearer ${t}`) },
    { weight: 1, arbitrary: headerText().map((h) => `Bearer ${h}`) },
    // RFC 9449 §7.1: a token bound to a key, sent with its proof in the DPoP header (extraHeaders).
    { weight: 2, arbitrary: tokens.map((t) => `DPoP ${t}`) },
    { weight: 1, arbitrary: fc.constantFrom('DPoP', 'DPoP ', 'dpop x y', 'DPoPx gat_') },
    {
      weight: 1,
      arbitrary: fc.constantFrom('Basic', 'Bearer', 'Basic =', 'basic Og==', 'BASIC Og==', 'Basic OjpA', 'Basic ====', 'Basic YTo=,YTpi'),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom('Bearer  x', 'bearer x y', 'Negotiate abc', 'Digest username="a"', 'Bearer gat_', 'Basic\tYTpi'),
    },
    { weight: 1, arbitrary: headerText() },
  )
}

/** A cookie header of garbage, or garbage next to `cookies` (a real session may be among them). */
export function cookieHeader(real: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const noSemicolon = headerText(30).map((s) => s.replace(/;/g, ''))
  const names = fc.constantFrom('gatehouse_session', 'gatehouse_csrf', '__Host-gatehouse_session', '__Host-gatehouse_csrf', 'x')
  const pair = fc.tuple(names, noSemicolon).map(([n, v]) => `${n}=${v}`)
  return fc.oneof(
    { weight: 4, arbitrary: real },
    { weight: 1, arbitrary: fc.tuple(real, pair).map(([r, p]) => `${r}; ${p}`) },
    { weight: 1, arbitrary: fc.tuple(pair, real).map(([p, r]) => `${p}; ${r}`) },
    { weight: 1, arbitrary: fc.array(pair, { minLength: 1, maxLength: 3 }).map((ps) => ps.join('; ')) },
    { weight: 1, arbitrary: headerText() },
  )
}

/** The methods Gatehouse serves, and the others a client may try. */
export const ODD_METHODS = ['PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'PROPFIND'] as const

export const method = (natural: readonly string[]): fc.Arbitrary<string> =>
  fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...natural) }, { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', ...ODD_METHODS) })

/** A DPoP proof's protected header: typ dpop+jwt, ES256, a public P-256 key of garbage coordinates. */
const DPOP_HEADER = base64url(JSON.stringify({ typ: 'dpop+jwt', alg: 'ES256', jwk: { kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'AAAA' } }))

function base64url(text: string): string {
  return Buffer.from(text).toString('base64url')
}

/** Header names a client may send besides, with header garbage as values. Never framing headers (Host, Content-Length, Transfer-Encoding). */
export const extraHeaders: fc.Arbitrary<Record<string, string>> = fc.dictionary(
  fc.constantFrom(
    'x-request-id',
    'accept',
    'accept-language',
    'accept-encoding',
    'x-forwarded-for',
    'x-forwarded-proto',
    'x-forwarded-host',
    'referer',
    'user-agent',
    'if-none-match',
    'range',
    'expect',
    'content-encoding',
    'x-http-method-override',
    'sec-fetch-mode',
    'sec-fetch-dest',
    'x-a',
    'dpop',
  ),
  fc.oneof(
    { weight: 6, arbitrary: headerText() },
    { weight: 1, arbitrary: fc.constant('x'.repeat(8000)) },
    // A DPoP proof's shape (RFC 9449 §4.2) with nothing valid inside, and two proofs in one header.
    { weight: 1, arbitrary: fc.constantFrom(`${DPOP_HEADER}.e30.c2ln`, `${DPOP_HEADER}.e30.c2ln, ${DPOP_HEADER}.e30.c2ln`, 'a.b.c') },
  ),
  { maxKeys: 3 },
)

/** A route's path as sent, and now and then spelled otherwise: trailing slash, other case, encoded letters, suffixes. */
export const pathOf = (path: string): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 12, arbitrary: fc.constant(path) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        `${path}/`,
        path.toUpperCase(),
        `/${path}`,
        `${path}%00`,
        `${path};x=1`,
        `${path}.json`,
        path.replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`),
        `${path}/..`,
        `${path}/%2e%2e/x`,
      ),
    },
  )

/** A path segment no route has: encoded text, raw broken encodings, dot segments, long ones. */
const segment: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('oauth', 'applications', 'token', 'authorize', '.well-known', 'static', 'new', 'edit', 'admin') },
  { weight: 1, arbitrary: fc.constantFrom('..', '.', '%2e%2e', '%2F', '%00', '%zz', '%C3', 'a'.repeat(300), '%E4%B8%80', '~', '*') },
  { weight: 2, arbitrary: text(12).map(encodeText) },
  // app.inject reads the URL as a WHATWG URL, to which a backslash is a slash (and `/\host` another host):
  // sent encoded, so the segment stays a segment as it would for a raw HTTP client.
  { weight: 1, arbitrary: rawChunk.map((c) => c.replace(/[\\?]/g, (x) => encodeText(x))) },
)

/** A path that is not one of Gatehouse's routes, or is one by accident. */
export const unknownPath: fc.Arbitrary<string> = fc
  .array(segment, { minLength: 1, maxLength: 4 })
  .map((segments) => `/${segments.join('/')}`)
