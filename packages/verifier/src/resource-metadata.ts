import { DPOP_SIGNING_ALGS } from './dpop.js'
import { SCOPE_TOKEN } from './scope-catalogue.js'

/*
 * Protected-resource metadata (RFC 9728): the JSON document a resource server publishes at
 * `/.well-known/oauth-protected-resource` so that a client that knows only the API's URL (an MCP
 * client, say) learns which authorization server issues tokens for it, and the URL of that
 * document, which every 401 challenge names (§5.1). Built once, when the verifier is created:
 * a bad option stops the API at start-up, not at its first request.
 */

/** RFC 9728 §3.1: the well-known suffix, inserted between the host and the resource's path. */
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource'

/** What the `resourceMetadata` option may add to the document. */
export interface ResourceMetadataOptions {
  /** `resource_name` (RFC 9728 §2): the API's name, which a client may show its user. */
  resourceName?: string
  /**
   * `scopes_supported` (§2). Default: the names the verifier's `scopes` define, or Gatehouse's
   * built-in scopes without that option.
   */
  scopesSupported?: readonly string[]
  /** `resource_documentation` (§2): a page for developers who use the API. */
  documentationUrl?: string
}

/** The document itself (RFC 9728 §2): what the adapters serve as JSON. */
export interface ProtectedResourceMetadata {
  readonly resource: string
  readonly authorization_servers: readonly string[]
  readonly scopes_supported: readonly string[]
  readonly bearer_methods_supported: readonly string[]
  readonly dpop_signing_alg_values_supported: readonly string[]
  readonly resource_name?: string
  readonly resource_documentation?: string
}

/** A verifier's metadata: the document, where it is served, and the URL its challenges name. */
export interface ResourceMetadata {
  readonly document: ProtectedResourceMetadata
  /**
   * The absolute URL of the document (§3.1), the `resource_metadata` of every 401 challenge
   * (§5.1): the path-suffixed form when the resource has a path.
   */
  readonly url: string
  /**
   * The paths the adapters answer at: `/.well-known/oauth-protected-resource`, and when the
   * resource has a path, that form with the path appended as well (§3.1).
   */
  readonly paths: readonly string[]
}

/** Hosts an `http:` resource or issuer may name, for development on one machine. */
function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname)
}

/**
 * RFC 8707 §2 and RFC 9728 §1.2: a resource identifier is an absolute `https` URL without a
 * fragment; the verifier refuses a query too (its metadata path could not carry it, §3.1) and
 * credentials. `http:` is allowed for a loopback host (`http://localhost:4000`), for development.
 * Throws a RangeError naming the problem.
 */
export function checkResourceUrl(value: unknown, option: string): URL {
  const fail = (problem: string): never => {
    throw new RangeError(`${option} ${problem} (got ${JSON.stringify(String(value).slice(0, 100))})`)
  }
  if (typeof value !== 'string' || !URL.canParse(value)) return fail('must be an absolute URL, such as https://api.example.com')
  const url = new URL(value)
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) {
    fail('must be an https URL (http only for localhost, 127.0.0.1 or [::1])')
  }
  if (url.hash !== '' || value.includes('#')) fail('must not have a fragment')
  if (url.search !== '' || value.includes('?')) fail('must not have a query')
  if (url.username !== '' || url.password !== '') fail('must not carry a user name or password')
  return url
}

/**
 * RFC 8707 §2: the check of a token's audience against the verifier's `resource`, built once:
 * true when the token is for other resources only. A token without an audience (null) is for
 * any resource. A verifier without `resource` refuses every token with an audience: it cannot
 * tell whether it is one of them, and RFC 9068 §4 has a resource server accept only tokens whose
 * audience names it (the views for earlier verifiers fail closed the same way). Identifiers are compared
 * after the normalisation of RFC 3986 §6.2.2 and §6.2.3 (WHATWG URL parsing: scheme and host
 * case, default port, an empty path as "/"), since a client may send `https://api.example.com/`
 * for `https://api.example.com`; nothing else, a trailing slash after a path say, makes two
 * identifiers one.
 */
export function audienceCheck(resource: string | undefined): (audience: readonly string[] | null) => boolean {
  if (resource === undefined) return (audience) => audience !== null
  const normalized = new URL(resource).href
  const names = (identifier: string) => identifier === resource || (URL.canParse(identifier) && new URL(identifier).href === normalized)
  return (audience) => audience !== null && !audience.some(names)
}

/** An http(s) URL given as an option (an issuer, a documentation page); throws a RangeError. */
function checkHttpUrl(value: unknown, option: string): URL {
  const shown = JSON.stringify(String(value).slice(0, 100))
  if (typeof value !== 'string' || !URL.canParse(value)) throw new RangeError(`${option} must be an absolute http(s) URL (got ${shown})`)
  const url = new URL(value)
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new RangeError(`${option} must be an http(s) URL (got ${shown})`)
  return url
}

/** Gatehouse's introspection endpoint, relative to its issuer (docs/resource-apis.md). */
const INTROSPECTION_PATH = '/oauth/introspect'

/**
 * The authorization server the metadata names (RFC 9728 §2 `authorization_servers`): `issuer`
 * when given, Gatehouse's PUBLIC_URL, which is its issuer (RFC 8414 §2); else the introspection
 * URL without `/oauth/introspect`, which is the issuer when the verifier reaches Gatehouse at its
 * public address. Database mode knows no URL of Gatehouse, so there `issuer` is required.
 */
export function issuerOf(issuer: string | undefined, introspectionUrl: string | undefined): string {
  if (issuer !== undefined) {
    const url = checkHttpUrl(issuer, 'issuer')
    if (url.search !== '' || url.hash !== '') throw new RangeError('issuer must not have a query or fragment (RFC 8414 §2)')
    // Gatehouse's issuer has no trailing slash; a client compares it exactly (RFC 8414 §3.3).
    return issuer.replace(/\/+$/, '')
  }
  if (introspectionUrl === undefined) {
    throw new RangeError('issuer is required with resource in database mode: Gatehouse\'s PUBLIC_URL, e.g. "https://auth.example.com"')
  }
  const url = checkHttpUrl(introspectionUrl, 'introspectionUrl')
  const path = url.pathname.endsWith(INTROSPECTION_PATH) ? url.pathname.slice(0, -INTROSPECTION_PATH.length) : ''
  return url.origin + path.replace(/\/+$/, '')
}

/**
 * The verifier's metadata for `resource`, checked: throws a RangeError naming the first bad
 * option. `defaultScopes`: the scopes the verifier's catalogue defines.
 */
export function resourceMetadata(
  resource: string,
  issuer: string,
  defaultScopes: readonly string[],
  options: ResourceMetadataOptions = {},
): ResourceMetadata {
  const url = checkResourceUrl(resource, 'resource')
  const scopes = options.scopesSupported ?? defaultScopes
  if (!Array.isArray(scopes)) throw new RangeError('resourceMetadata.scopesSupported must be a list of scope names')
  for (const scope of scopes) {
    if (typeof scope !== 'string' || !SCOPE_TOKEN.test(scope)) {
      throw new RangeError(`resourceMetadata.scopesSupported: ${JSON.stringify(scope)} is not a scope (RFC 6749 3.3)`)
    }
  }
  const { resourceName, documentationUrl } = options
  if (resourceName !== undefined && (typeof resourceName !== 'string' || resourceName.trim() === '' || resourceName.length > 200)) {
    throw new RangeError('resourceMetadata.resourceName must be a non-empty string of at most 200 characters')
  }
  if (documentationUrl !== undefined) checkHttpUrl(documentationUrl, 'resourceMetadata.documentationUrl')

  const document: ProtectedResourceMetadata = Object.freeze({
    // §3.3: the client compares this with the identifier it asked about, exactly as configured.
    resource,
    authorization_servers: Object.freeze([issuer]),
    scopes_supported: Object.freeze([...scopes]),
    // RFC 6750 2.1 only: the verifier reads the Authorization header, never a query or form body.
    bearer_methods_supported: Object.freeze(['header']),
    dpop_signing_alg_values_supported: DPOP_SIGNING_ALGS,
    ...(resourceName === undefined ? {} : { resource_name: resourceName.trim() }),
    ...(documentationUrl === undefined ? {} : { resource_documentation: documentationUrl }),
  })
  // §3.1: the well-known string goes between the host and the path; a lone "/" is no path.
  const suffix = url.pathname === '/' ? '' : url.pathname
  const paths = Object.freeze(suffix === '' ? [RESOURCE_METADATA_PATH] : [RESOURCE_METADATA_PATH, RESOURCE_METADATA_PATH + suffix])
  return Object.freeze({ document, url: url.origin + RESOURCE_METADATA_PATH + suffix, paths })
}

/**
 * The headers of the document: public and read-only, so any origin may read it (a browser-based
 * client discovers from another origin) and caches may keep it for an hour.
 */
export const RESOURCE_METADATA_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'application/json; charset=utf-8',
  'cache-control': 'public, max-age=3600',
  'access-control-allow-origin': '*',
})

/** The answer to a CORS preflight for the document: any header (MCP clients send MCP-Protocol-Version), GET only. */
export const RESOURCE_METADATA_PREFLIGHT_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, HEAD, OPTIONS',
  'access-control-allow-headers': '*',
  'access-control-max-age': '86400',
})
