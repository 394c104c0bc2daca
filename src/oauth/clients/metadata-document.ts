import { validateRegisteredRedirectUri } from './redirect-uri-registration.js'

/*
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): which client_id
 * URLs may be fetched at all (§3), and what a fetched document must say to define a client (§4).
 * The network part is metadata-fetch.ts; why Gatehouse accepts only public clients this way is
 * docs/decisions/026-client-metadata-documents.md.
 */

/** The longest client_id Gatehouse looks up at all (src/lib/tokens.ts), so the longest URL it fetches. */
export const MAX_CLIENT_ID_URL_LENGTH = 256
/** The longest logo_uri or client_uri kept. */
const MAX_LINK_LENGTH = 2000
/** Redirect URIs one document may list. */
export const MAX_DOCUMENT_REDIRECT_URIS = 20
const MAX_NAME_LENGTH = 100
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/
const TRAILING_DOT = 'must not end with a dot after the host name'

/** The host rules (CLIENT_ID_METADATA_ALLOWED_HOSTS, CLIENT_ID_METADATA_BLOCKED_HOSTS): host names, or `*.suffix` for any name under suffix. */
export interface HostRules {
  /** Empty: any host not blocked. */
  readonly allowed: readonly string[]
  readonly blocked: readonly string[]
}

/** What a metadata document defines: a public client (no secret; PKCE S256 at /oauth/authorize). */
export interface ClientMetadata {
  /** The URL, exactly as the client sends it and the document names itself. */
  readonly clientId: string
  readonly clientName: string | undefined
  readonly logoUri: string | undefined
  readonly clientUri: string | undefined
  /** Exactly those listed, each accepted by the rules of registered ones (redirect-uri-registration.ts). */
  readonly redirectUris: readonly string[]
}

export type Checked<T> = { ok: true; value: T } | { ok: false; reason: string }

/**
 * Whether a client_id is meant as a metadata document's URL: it starts with https:// (or http://,
 * for a loopback document in development). Gatehouse's own client_ids never contain a colon.
 */
export function looksLikeMetadataUrl(clientId: string): boolean {
  return clientId.startsWith('https://') || clientId.startsWith('http://')
}

function matchesRule(host: string, rule: string): boolean {
  if (rule.startsWith('*.')) return host.endsWith(rule.slice(1))
  return host === rule
}

/** Whether the host rules let Gatehouse fetch from `host`: a block wins over an allow. */
export function hostPermitted(host: string, rules: HostRules): boolean {
  if (rules.blocked.some((r) => matchesRule(host, r))) return false
  return rules.allowed.length === 0 || rules.allowed.some((r) => matchesRule(host, r))
}

/** The host of a client_id URL as the host rules and the fetch see it: its hostname, an IPv6 address without brackets. */
function hostOfClientId(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '')
}

/**
 * `host.` names the same host as `host` in DNS, yet is another string: the host rules and the
 * stored client_id would see a second spelling, so a blocked host could come back with a dot.
 * Such a client_id is never fetched (checkClientIdUrl), so no client is ever known by one.
 */
function endsWithDot(host: string): boolean {
  return host.endsWith('.')
}

/**
 * The host rules (CLIENT_ID_METADATA_*_HOSTS) for a client_id URL: its host, as the fetch will
 * connect to it, unless spelled with a trailing dot or not permitted. One rule for the fetcher,
 * which asks it before connecting, and for the client endpoints, which ask it before reading a
 * stored client's row (clientIdKnown in src/oauth/token/client-auth.ts), so that both always
 * agree on which metadata clients exist (docs/decisions/026-client-metadata-documents.md).
 */
export function checkClientIdHost(url: URL, rules: HostRules): Checked<string> {
  const host = hostOfClientId(url)
  if (endsWithDot(host)) return { ok: false, reason: `the client_id ${TRAILING_DOT}` }
  if (!hostPermitted(host, rules)) return { ok: false, reason: `the host ${host} is not allowed by this server` }
  return { ok: true, value: host }
}

/**
 * The URL rules of draft-ietf-oauth-client-id-metadata-document §3: https, a path, no fragment, no
 * user name or password, no dot segments. The string must be the URL's own serialisation (WHATWG
 * URL), so what is compared with the document's client_id and stored is one spelling: an
 * upper-case host, a default port, `%2e` segments, a missing path or a host ending in a dot (a
 * fully-qualified spelling the WHATWG parser keeps) all fail here. `http` is
 * accepted only for a loopback host when `httpLoopback` is on (development), so the rest of the
 * checks run on such a URL too.
 */
export function checkClientIdUrl(raw: string, isLoopback: (host: string) => boolean, httpLoopback: boolean): Checked<URL> {
  if (raw.length > MAX_CLIENT_ID_URL_LENGTH) return { ok: false, reason: `is longer than ${MAX_CLIENT_ID_URL_LENGTH} characters` }
  if (!URL.canParse(raw)) return { ok: false, reason: 'is not a URL' }
  const url = new URL(raw)
  const host = hostOfClientId(url)
  if (url.protocol === 'http:') {
    if (!httpLoopback || !isLoopback(host)) return { ok: false, reason: 'must use https' }
  } else if (url.protocol !== 'https:') {
    return { ok: false, reason: 'must use https' }
  }
  if (endsWithDot(host)) return { ok: false, reason: TRAILING_DOT }
  if (raw.includes('#')) return { ok: false, reason: 'must not have a fragment' }
  if (url.username !== '' || url.password !== '') return { ok: false, reason: 'must not contain a user name or password' }
  const path = /^[a-z]+:\/\/[^/?#]*([^?#]*)/i.exec(raw)?.[1] ?? ''
  if (path === '' || path === '/') return { ok: false, reason: 'must have a path, as in https://client.example/oauth-client.json' }
  if (path.split('/').some((seg) => /^(\.|%2e){1,2}$/i.test(seg))) return { ok: false, reason: 'must not contain . or .. path segments' }
  if (url.href !== raw) {
    return {
      ok: false,
      reason: 'must be written in its normal form: a lower-case host, no default port, escapes as a URL parser writes them',
    }
  }
  return { ok: true, value: url }
}

function optionalString(doc: Record<string, unknown>, key: string, max: number): Checked<string | undefined> {
  const v = doc[key]
  if (v === undefined) return { ok: true, value: undefined }
  if (typeof v !== 'string' || v.length === 0 || v.length > max || CONTROL.test(v)) {
    return { ok: false, reason: `${key} must be a string of 1 to ${max} characters without control characters` }
  }
  return { ok: true, value: v }
}

function optionalHttpsUrl(doc: Record<string, unknown>, key: string): Checked<string | undefined> {
  const v = optionalString(doc, key, MAX_LINK_LENGTH)
  if (!v.ok || v.value === undefined) return v
  if (!URL.canParse(v.value) || new URL(v.value).protocol !== 'https:') return { ok: false, reason: `${key} must be an https URL` }
  return v
}

function listOnly(doc: Record<string, unknown>, key: string, allowed: readonly string[]): string | undefined {
  const v = doc[key]
  if (v === undefined) return undefined
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string' && allowed.includes(x))) {
    return `${key} may list only ${allowed.join(' and ')}`
  }
  return undefined
}

/**
 * A fetched document, parsed as JSON, checked against the URL it came from (draft §4): its
 * client_id equal to that URL by simple string comparison; no shared secret (§4.1), and here only
 * `token_endpoint_auth_method: none`, a public client; at least one redirect URI, each one a
 * registered redirect URI could be; the code flow only.
 */
export function checkClientMetadata(url: string, doc: unknown): Checked<ClientMetadata> {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return { ok: false, reason: 'the document is not a JSON object' }
  const d = doc as Record<string, unknown>
  if (d.client_id !== url) return { ok: false, reason: 'the document’s client_id is not its URL' }
  if ('client_secret' in d || 'client_secret_expires_at' in d) return { ok: false, reason: 'the document must not contain a client secret' }
  if (d.token_endpoint_auth_method !== 'none') {
    return { ok: false, reason: 'token_endpoint_auth_method must be none: only public clients may identify with a metadata document here' }
  }
  const grants = listOnly(d, 'grant_types', ['authorization_code', 'refresh_token'])
  if (grants !== undefined) return { ok: false, reason: grants }
  const responses = listOnly(d, 'response_types', ['code'])
  if (responses !== undefined) return { ok: false, reason: responses }
  const uris = d.redirect_uris
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > MAX_DOCUMENT_REDIRECT_URIS) {
    return { ok: false, reason: `redirect_uris must list 1 to ${MAX_DOCUMENT_REDIRECT_URIS} URIs` }
  }
  for (const uri of uris) {
    if (typeof uri !== 'string') return { ok: false, reason: 'redirect_uris must be strings' }
    const check = validateRegisteredRedirectUri(uri)
    if (!check.ok) return { ok: false, reason: `redirect URI ${JSON.stringify(uri.slice(0, 200))} ${check.reason}` }
    // An internationalised host would be stored converted: the client then could not send what it listed.
    if (check.uri !== uri) return { ok: false, reason: `redirect URI ${JSON.stringify(uri.slice(0, 200))} must have an ASCII host` }
  }
  const name = optionalString(d, 'client_name', MAX_NAME_LENGTH)
  if (!name.ok) return name
  const logo = optionalHttpsUrl(d, 'logo_uri')
  if (!logo.ok) return logo
  const home = optionalHttpsUrl(d, 'client_uri')
  if (!home.ok) return home
  return {
    ok: true,
    value: Object.freeze({
      clientId: url,
      clientName: name.value?.trim() || undefined,
      logoUri: logo.value,
      clientUri: home.value,
      redirectUris: Object.freeze([...new Set(uris as string[])]),
    }),
  }
}

/**
 * Seconds a response may be reused, from its Cache-Control (RFC 9111 5.2.2): max-age, or 0 for
 * no-store and no-cache; undefined when it says neither.
 */
export function maxAgeOf(cacheControl: string | undefined): number | undefined {
  if (cacheControl === undefined) return undefined
  const directives = cacheControl
    .toLowerCase()
    .split(',')
    .map((d) => d.trim())
  if (directives.some((d) => d === 'no-store' || d === 'no-cache')) return 0
  for (const d of directives) {
    const m = /^max-age\s*=\s*"?(\d{1,10})"?$/.exec(d)
    if (m) return Number(m[1])
  }
  return undefined
}
