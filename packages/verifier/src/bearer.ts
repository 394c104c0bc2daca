import { DPOP_SIGNING_ALGS } from './dpop.js'
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

/**
 * The token of an `Authorization: DPoP <token>` header (RFC 9449 §7.1, scheme case-insensitive),
 * possibly '' or garbage; undefined for any other scheme.
 */
export function dpopToken(authorization: string | undefined): string | undefined {
  if (authorization === undefined || authorization.length < 5) return undefined
  if (authorization.slice(0, 5).toLowerCase() !== 'dpop ') return undefined
  return authorization.slice(5).trim()
}

function quoted(value: string): string {
  return `"${value.replace(/[\\"]/g, '\\$&')}"`
}

/** RFC 6750 3: error_description allows %x20-21 / %x23-5B / %x5D-7E only: no quotes, no backslash. */
function describable(description: string): string {
  return quoted(description.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, "'"))
}

/** RFC 9728 §5.1: `, resource_metadata="<url>"` for a verifier that publishes its metadata, else ''. */
function metadataParameter(resourceMetadataUrl: string | undefined): string {
  return resourceMetadataUrl === undefined ? '' : `, resource_metadata=${quoted(resourceMetadataUrl)}`
}

/** The refusal of a token whose audience does not name this resource server (RFC 8707 §2, RFC 9068 §4). */
const OTHER_RESOURCE = 'The access token is for another resource'

/** The failures a verifier answers with, built once per realm so a refusal allocates nothing. */
export class BearerChallenges {
  /** RFC 6750 3.1: no credentials at all, so no error code. */
  readonly missing: VerifyFailure
  readonly invalid: VerifyFailure
  /** RFC 9449 §7.2: a token bound to a key, presented as a bearer token. */
  readonly boundAsBearer: VerifyFailure
  /** RFC 8707: the token's audience names other resources, not this one. */
  readonly otherResource: VerifyFailure
  readonly unavailable: VerifyFailure
  readonly #forbidden = new Map<string, VerifyFailure>()
  readonly #realm: string
  /**
   * What ends every Bearer challenge: `, resource_metadata="…"` when the verifier has a resource
   * (RFC 9728 §5.1), then `, DPoP algs="…"` (with the same parameter) when DPoP is accepted too
   * (RFC 9449 §7.1: one challenge per scheme); '' for neither.
   */
  readonly #offer: string

  /**
   * `offerDpop`: the verifier accepts `Authorization: DPoP` too, so every Bearer challenge also
   * offers it. `resourceMetadataUrl`: where the verifier's RFC 9728 metadata is, named by every
   * challenge (§5.1).
   */
  constructor(realm: string, offerDpop = false, resourceMetadataUrl?: string) {
    const metadata = metadataParameter(resourceMetadataUrl)
    this.#realm = `Bearer realm=${quoted(realm)}`
    this.#offer = metadata + (offerDpop ? `, ${DPOP_CHALLENGE}${metadata}` : '')
    this.missing = Object.freeze({
      ok: false,
      status: 401,
      error: undefined,
      description: 'An access token is required: Authorization: Bearer <token>',
      wwwAuthenticate: this.#realm + this.#offer,
      scope: undefined,
    })
    this.invalid = this.#failure('invalid_token', 'The access token is invalid, revoked or malformed')
    this.boundAsBearer = this.#failure('invalid_token', 'The access token is bound to a key: send it as Authorization: DPoP with a proof')
    this.otherResource = this.#failure('invalid_token', OTHER_RESOURCE)
    this.unavailable = Object.freeze({
      ok: false,
      status: 503,
      error: 'temporarily_unavailable',
      description: 'The access token could not be checked; try again',
      wwwAuthenticate: undefined,
      scope: undefined,
    })
  }

  #failure(error: 'invalid_token', description: string): VerifyFailure {
    return Object.freeze({
      ok: false,
      status: 401,
      error,
      description,
      wwwAuthenticate: `${this.#realm}, error="${error}", error_description=${describable(description)}${this.#offer}`,
      scope: undefined,
    })
  }

  /** RFC 6750 3.1: 403 insufficient_scope, naming the scope required. */
  forbidden(scope: string): VerifyFailure {
    let failure = this.#forbidden.get(scope)
    if (failure === undefined) {
      const description = `The access token lacks the scope ${scope}`
      failure = Object.freeze({
        ok: false,
        status: 403,
        error: 'insufficient_scope',
        description,
        wwwAuthenticate: `${this.#realm}, error="insufficient_scope", error_description=${describable(description)}, scope=${quoted(scope)}${this.#offer}`,
        scope,
      })
      this.#forbidden.set(scope, failure)
    }
    return failure
  }
}

/** RFC 9449 §7.1: the DPoP challenge names the algorithms a proof may use. */
const DPOP_CHALLENGE = `DPoP algs="${DPOP_SIGNING_ALGS.join(' ')}"`

/**
 * The failures of a request that used the DPoP scheme (RFC 9449 §7.1): answered with the DPoP
 * challenge alone. `invalid_dpop_proof` for a missing, malformed, mismatched or replayed proof;
 * `invalid_token` for a token that is unknown, revoked, not bound, or bound to another key.
 */
export class DpopChallenges {
  readonly invalid: VerifyFailure
  /** RFC 9449 §7.1: the scheme says the token is bound, and it is not; a bearer token goes as Bearer. */
  readonly notBound: VerifyFailure
  /** RFC 9449 §7.1: the proof's key is not the one the token is bound to. */
  readonly otherKey: VerifyFailure
  /** RFC 8707: the token's audience names other resources, not this one. */
  readonly otherResource: VerifyFailure
  readonly missingProof: VerifyFailure
  readonly manyProofs: VerifyFailure
  readonly replayed: VerifyFailure
  readonly #forbidden = new Map<string, VerifyFailure>()
  /** `, algs="…"`, then `, resource_metadata="…"` when the verifier has a resource (RFC 9728 §5.1). */
  readonly #tail: string

  /** `resourceMetadataUrl`: where the verifier's RFC 9728 metadata is, named by every challenge (§5.1). */
  constructor(resourceMetadataUrl?: string) {
    this.#tail = `, ${DPOP_CHALLENGE.slice(5)}${metadataParameter(resourceMetadataUrl)}`
    this.invalid = this.#failure('invalid_token', 'The access token is invalid, revoked or malformed')
    this.notBound = this.#failure('invalid_token', 'The access token is not bound to a key: send it as Authorization: Bearer')
    this.otherKey = this.#failure('invalid_token', "The access token is bound to another key than the DPoP proof's")
    this.otherResource = this.#failure('invalid_token', OTHER_RESOURCE)
    this.missingProof = this.#failure('invalid_dpop_proof', 'A DPoP proof is required: one DPoP header')
    this.manyProofs = this.#failure('invalid_dpop_proof', 'Exactly one DPoP header is allowed (RFC 9449 4.3)')
    this.replayed = this.#failure('invalid_dpop_proof', 'The DPoP proof was used before')
  }

  /** A proof that failed a check of RFC 9449 §4.3, with the check it failed. */
  proof(description: string): VerifyFailure {
    return this.#failure('invalid_dpop_proof', description)
  }

  forbidden(scope: string): VerifyFailure {
    let failure = this.#forbidden.get(scope)
    if (failure === undefined) {
      failure = this.#failure('insufficient_scope', `The access token lacks the scope ${scope}`, scope)
      this.#forbidden.set(scope, failure)
    }
    return failure
  }

  #failure(error: 'invalid_token' | 'invalid_dpop_proof' | 'insufficient_scope', description: string, scope?: string): VerifyFailure {
    const scoped = scope === undefined ? '' : `, scope=${quoted(scope)}`
    return Object.freeze({
      ok: false,
      status: error === 'insufficient_scope' ? 403 : 401,
      error,
      description,
      wwwAuthenticate: `DPoP error="${error}", error_description=${describable(description)}${scoped}${this.#tail}`,
      scope,
    })
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
