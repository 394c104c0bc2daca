import type { Db } from '../../db/connect.js'
import { findResourceTargets } from '../../repositories/resource-identifiers.js'
import { InvalidTargetError } from '../errors.js'

/*
 * Resource indicators (RFC 8707, docs/decisions/025-audiences.md): a client names the APIs a
 * token is for by their identifiers, which an operator declared for resource server applications
 * (src/operator/resources.ts). A token minted for some records them as its audience, and expires.
 */

/** How many `resource` values one request may carry: a token is for a few APIs, never a list of all. */
export const MAX_RESOURCES_PER_REQUEST = 10

/** The longest identifier: a URL, kept short enough to travel in every token's row and answer. */
export const MAX_RESOURCE_IDENTIFIER_LENGTH = 2048

/** RESOURCE_TOKEN_TTL_SECONDS_DEFAULT (docs/operating/configuration.md). */
export interface ResourceSettings {
  /** The lifetime of a token for a resource server that set none, when the client chose none. */
  readonly defaultTtlSeconds: number
}

/** A resource server a request names, as the consent page and the token's lifetime need it. */
export interface ResourceTarget {
  readonly identifier: string
  readonly applicationId: string
  /** The resource server application's name: what the consent page calls the API. */
  readonly name: string
  readonly ttlSeconds: number | null
}

/**
 * RFC 8707 §2: each value an absolute URI without a fragment. The identifiers in their
 * normalised form (canonicalIdentifier), sorted and distinct (the order a token's audience is
 * kept in), or null when none was sent.
 */
export function parseResources(values: readonly string[]): string[] | null {
  if (values.length === 0) return null
  const distinct = new Set<string>()
  for (const value of values) {
    if (!isAbsoluteWithoutFragment(value)) {
      throw new InvalidTargetError('Each resource must be an absolute URI without a fragment (RFC 8707 §2)')
    }
    distinct.add(canonicalIdentifier(value))
    if (distinct.size > MAX_RESOURCES_PER_REQUEST) {
      throw new InvalidTargetError(`A request may name at most ${MAX_RESOURCES_PER_REQUEST} resources`)
    }
  }
  return [...distinct].sort()
}

/**
 * An identifier as it is declared, stored and compared: normalised by URL parsing (RFC 3986
 * §6.2.2, §6.2.3 as WHATWG URL applies them: scheme and host in lower case, a default port
 * dropped, an empty path `/`), so that `https://API.example.com` names `https://api.example.com/`,
 * as the verifier compares them. A value that does not parse is returned as it is.
 */
export function canonicalIdentifier(value: string): string {
  return URL.canParse(value) ? new URL(value).href : value
}

function isAbsoluteWithoutFragment(value: string): boolean {
  if (value.length > MAX_RESOURCE_IDENTIFIER_LENGTH || value.includes('#') || /\s/.test(value)) return false
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(value)) return false
  return URL.canParse(value)
}

/**
 * The resource servers of `identifiers` (parseResources' output); invalid_target unless each is
 * declared by an application still marked a resource server and not suspended. One indexed
 * read, made only for a request that names resources.
 */
export async function resourceTargets(db: Db, identifiers: readonly string[]): Promise<ResourceTarget[]> {
  const rows = await findResourceTargets(db, identifiers)
  const byIdentifier = new Map(rows.map((r) => [r.identifier, r]))
  return identifiers.map((identifier) => {
    const row = byIdentifier.get(identifier)
    if (!row?.usable) throw new InvalidTargetError('A requested resource is not an API this server issues tokens for')
    return { identifier, applicationId: row.application_id, name: row.name, ttlSeconds: row.resource_token_ttl_seconds }
  })
}

/** The names of the APIs, once each, for the consent page. */
export function resourceNames(targets: readonly ResourceTarget[]): string[] {
  const seen = new Map<string, string>()
  for (const t of targets) seen.set(t.applicationId, t.name)
  return [...seen.values()]
}

/** RFC 8707 §2.2: `asked` within `authorized`; null authorized means the grant named none, so any may be asked. */
export function withinAuthorized(asked: readonly string[], authorized: readonly string[] | null): boolean {
  return authorized === null || asked.every((r) => authorized.includes(r))
}

/**
 * The lifetime of a token with this audience, in seconds (docs/decisions/025-audiences.md): the
 * client application's own access-token lifetime when its owner chose one, else the shortest of
 * its resource servers' (each RESOURCE_TOKEN_TTL_SECONDS_DEFAULT unless set).
 */
export function audienceTtlSeconds(
  clientTtlSeconds: number | null,
  targets: readonly Pick<ResourceTarget, 'ttlSeconds'>[],
  settings: ResourceSettings,
): number {
  if (clientTtlSeconds !== null) return clientTtlSeconds
  return Math.min(...targets.map((t) => t.ttlSeconds ?? settings.defaultTtlSeconds))
}

/** Loopback hosts: an identifier on one is for development, when PUBLIC_URL is itself one. */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

function isHttpLoopback(url: URL): boolean {
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)
}

/**
 * Why `raw` cannot be declared as a resource identifier, or undefined when it can (RFC 8707 §2:
 * an absolute URI without a fragment; here an https URL without credentials, or an http
 * loopback one while PUBLIC_URL is http loopback too, for development). Declared and compared
 * in its canonicalIdentifier form.
 */
export function identifierProblem(raw: string, publicUrl: string): string | undefined {
  if (raw.length > MAX_RESOURCE_IDENTIFIER_LENGTH) return `is longer than ${MAX_RESOURCE_IDENTIFIER_LENGTH} characters`
  if (!isAbsoluteWithoutFragment(raw) && !raw.includes('#')) return 'is not an absolute URL'
  if (raw.includes('#')) return 'has a fragment (RFC 8707 §2 forbids one)'
  const url = new URL(raw)
  if (url.username !== '' || url.password !== '') return 'carries credentials'
  if (url.protocol === 'https:') return undefined
  if (isHttpLoopback(url) && isHttpLoopback(new URL(publicUrl))) return undefined
  return 'is not an https URL (http is accepted on loopback only, while PUBLIC_URL is http loopback too)'
}
