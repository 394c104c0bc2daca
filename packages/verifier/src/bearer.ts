import type { VerifyFailure } from './types.js'

/*
 * RFC 6750: the token travels in the Authorization header only (2.1). The query parameter
 * (2.3) and the form body (2.2) are never read: URLs end up in logs and browser history, and
 * resource APIs receive tokens in that header.
 */

/**
 * The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, RFC 7235
 * 2.1), possibly '' or garbage; undefined when the request carries no bearer credentials.
 */
export function bearerToken(authorization: string | undefined): string | undefined {
  if (authorization === undefined || authorization.length < 7) return undefined
  if (!authorization.startsWith('Bearer ') && authorization.slice(0, 7).toLowerCase() !== 'bearer ') return undefined
  return authorization.slice(7).trim()
}

function quoted(value: string): string {
  return `"${value.replace(/[\\"]/g, '\\$&')}"`
}

/** The failures a verifier answers with, built once per realm so a refusal allocates nothing. */
export class BearerChallenges {
  /** RFC 6750 3.1: no credentials at all, so no error code. */
  readonly missing: VerifyFailure
  readonly invalid: VerifyFailure
  readonly unavailable: VerifyFailure
  readonly #forbidden = new Map<string, VerifyFailure>()
  readonly #realm: string

  constructor(realm: string) {
    this.#realm = `Bearer realm=${quoted(realm)}`
    this.missing = Object.freeze({
      ok: false,
      status: 401,
      error: undefined,
      description: 'An access token is required: Authorization: Bearer <token>',
      wwwAuthenticate: this.#realm,
      scope: undefined,
    })
    const invalidDescription = 'The access token is invalid, revoked or malformed'
    this.invalid = Object.freeze({
      ok: false,
      status: 401,
      error: 'invalid_token',
      description: invalidDescription,
      wwwAuthenticate: `${this.#realm}, error="invalid_token", error_description=${quoted(invalidDescription)}`,
      scope: undefined,
    })
    this.unavailable = Object.freeze({
      ok: false,
      status: 503,
      error: 'temporarily_unavailable',
      description: 'The access token could not be checked; try again',
      wwwAuthenticate: undefined,
      scope: undefined,
    })
  }

  /** RFC 6750 3.1: 403 insufficient_scope, naming the scope required. */
  forbidden(scope: string): VerifyFailure {
    let failure = this.#forbidden.get(scope)
    if (failure === undefined) {
      // RFC 6750 3: error_description allows %x20-21 / %x23-5B / %x5D-7E only, so no quotes.
      const description = `The access token lacks the scope ${scope}`
      failure = Object.freeze({
        ok: false,
        status: 403,
        error: 'insufficient_scope',
        description,
        wwwAuthenticate: `${this.#realm}, error="insufficient_scope", error_description=${quoted(description)}, scope=${quoted(scope)}`,
        scope,
      })
      this.#forbidden.set(scope, failure)
    }
    return failure
  }
}

/** The headers of a refusal: the RFC 6750 3 challenge, and Retry-After when the check could not be made. */
export function failureHeaders(failure: VerifyFailure): Record<string, string> {
  const headers: Record<string, string> = {}
  if (failure.wwwAuthenticate !== undefined) headers['www-authenticate'] = failure.wwwAuthenticate
  if (failure.status === 503) headers['retry-after'] = '1'
  return headers
}

/** The JSON body that goes with a failure (none for a request without credentials). */
export function failureBody(failure: VerifyFailure): Record<string, string> | undefined {
  if (failure.error === undefined) return undefined
  const body: Record<string, string> = { error: failure.error, error_description: failure.description }
  if (failure.scope !== undefined) body.scope = failure.scope
  return body
}
