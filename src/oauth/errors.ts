/*
 * The closed family of OAuth errors. Each class is named after its RFC error code; the HTTP
 * layer maps them to the wire in one place (src/http/routes/oauth/json-errors.ts). Protocol code throws
 * these and nothing else for client-caused failures.
 */

/** Longer descriptions are cut: they travel in redirect URIs as well as in JSON. */
export const MAX_ERROR_DESCRIPTION = 200

/**
 * RFC 6749 4.1.2.1, 4.2.2.1 and 5.2: error_description "MUST NOT include characters outside the
 * set %x20-21 / %x23-5B / %x5D-7E" (printable ASCII without `"` and `\`). Every OAuthError goes
 * through this, so no message, however it was built, can carry request input outside that set:
 * `"` becomes `'`, anything else outside the set (controls, `\`, non-ASCII) becomes `?`.
 */
export function toErrorDescription(text: string): string {
  const safe = text.replace(/"/g, "'").replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/gu, '?')
  return safe.length > MAX_ERROR_DESCRIPTION ? `${safe.slice(0, MAX_ERROR_DESCRIPTION - 3)}...` : safe
}

export abstract class OAuthError extends Error {
  abstract readonly error: string
  readonly status: number = 400
  /** Extra response headers, e.g. WWW-Authenticate for invalid_client over Basic. */
  headers: Record<string, string> = {}
  /** The error_description: only RFC 6749's characters (toErrorDescription). */
  readonly description: string

  constructor(description: string, options?: { cause?: unknown }) {
    const safe = toErrorDescription(description)
    super(safe, options)
    this.description = safe
  }

  toJSON(): { error: string; error_description: string } {
    return { error: this.error, error_description: this.description }
  }
}

/** RFC 6749 5.2: missing or repeated parameter, unsupported value, otherwise malformed. */
export class InvalidRequestError extends OAuthError {
  readonly error = 'invalid_request'
}

/**
 * RFC 6749 5.2: client authentication failed. 401; when the client tried Basic, the response
 * carries `WWW-Authenticate: Basic`.
 */
export class InvalidClientError extends OAuthError {
  readonly error = 'invalid_client'
  override readonly status = 401
  constructor(description: string, usedBasic = false) {
    super(description)
    if (usedBasic) this.headers['www-authenticate'] = 'Basic realm="gatehouse", charset="UTF-8"'
  }
}

/**
 * RFC 6749 5.2: the grant (code) is invalid, expired, revoked, does not match the redirect
 * URI used in the authorization request, or was issued to another client.
 */
export class InvalidGrantError extends OAuthError {
  readonly error = 'invalid_grant'
}

/** RFC 6749 5.2 / 4.1.2.1: the client is not authorized to use this grant or response type. */
export class UnauthorizedClientError extends OAuthError {
  readonly error = 'unauthorized_client'
}

/**
 * The client authenticated but may not use this endpoint: the revocation stream is for
 * resource servers (docs/resource-apis.md). 403, as RFC 6750 3.1 answers a token that lacks
 * what the request needs.
 */
export class ResourceServerOnlyError extends OAuthError {
  readonly error = 'unauthorized_client'
  override readonly status = 403
}

/** RFC 6749 5.2: the grant type is not supported by this server. */
export class UnsupportedGrantTypeError extends OAuthError {
  readonly error = 'unsupported_grant_type'
}

/** RFC 6749 4.1.2.1: the server does not support this response_type. */
export class UnsupportedResponseTypeError extends OAuthError {
  readonly error = 'unsupported_response_type'
}

/** RFC 6749 5.2 / 4.1.2.1: the requested scope is invalid, unknown or exceeds what is allowed. */
export class InvalidScopeError extends OAuthError {
  readonly error = 'invalid_scope'
}

/**
 * RFC 8707 §2: a `resource` is not an absolute URI without fragment, is not a resource server's
 * declared identifier (or its server is suspended), or goes beyond what was authorized.
 */
export class InvalidTargetError extends OAuthError {
  readonly error = 'invalid_target'
}

/** RFC 6749 4.1.2.1: the resource owner or the server denied the request. */
export class AccessDeniedError extends OAuthError {
  readonly error = 'access_denied'
}

/** OpenID Connect Core 3.1.2.6: prompt=none, and the user must log in (again) first. */
export class LoginRequiredError extends OAuthError {
  readonly error = 'login_required'
}

/** OpenID Connect Core 3.1.2.6: prompt=none, and the user must consent first. */
export class ConsentRequiredError extends OAuthError {
  readonly error = 'consent_required'
}

/** OpenID Connect Core 3.1.2.6: prompt=none, and some page must be shown first (enrolling a second factor). */
export class InteractionRequiredError extends OAuthError {
  readonly error = 'interaction_required'
}

/** OpenID Connect Core 3.1.2.6: request objects (the `request` parameter) are not supported. */
export class RequestNotSupportedError extends OAuthError {
  readonly error = 'request_not_supported'
}

/** OpenID Connect Core 3.1.2.6: request objects by reference (`request_uri`) are not supported. */
export class RequestUriNotSupportedError extends OAuthError {
  readonly error = 'request_uri_not_supported'
}

/** Not an RFC code on its own: too many failed attempts; mapped to 429 with Retry-After. */
export class SlowDownError extends OAuthError {
  readonly error = 'invalid_request'
  override readonly status = 429
  constructor(
    description: string,
    readonly retryAfterSeconds: number,
  ) {
    super(description)
    this.headers['retry-after'] = String(retryAfterSeconds)
  }
}

/** RFC 8628 3.5: the user has not answered yet; the device polls again after its interval. */
export class AuthorizationPendingError extends OAuthError {
  readonly error = 'authorization_pending'
}

/** RFC 8628 3.5: the device polled sooner than its interval; the interval is now 5 s longer. 400, unlike SlowDownError's 429. */
export class PollTooSoonError extends OAuthError {
  readonly error = 'slow_down'
}

/** RFC 8628 3.5: the device code expired before the user answered; the device must start again. */
export class ExpiredTokenError extends OAuthError {
  readonly error = 'expired_token'
}

/** RFC 6749 5.2 / 4.1.2.1: an unexpected condition; the detail is logged, never sent. */
export class ServerError extends OAuthError {
  readonly error = 'server_error'
  override readonly status = 500
}

/**
 * RFC 6749 4.1.2.1: the server cannot handle the request now (its database is unreachable);
 * 503 with Retry-After (RFC 9110 10.2.3), on every OAuth endpoint.
 */
export class TemporarilyUnavailableError extends OAuthError {
  readonly error = 'temporarily_unavailable'
  override readonly status = 503
  constructor(description: string, retryAfterSeconds: number) {
    super(description)
    this.headers['retry-after'] = String(retryAfterSeconds)
  }
}

/**
 * RFC 9449 §5, §7.1: the DPoP proof is missing where the application requires one, or fails a
 * check of §4.3. 400 at the token and PAR endpoints (401 with `WWW-Authenticate: DPoP` at a
 * resource, which answers it itself).
 */
export class InvalidDpopProofError extends OAuthError {
  readonly error = 'invalid_dpop_proof'
}

/**
 * RFC 9449 §8: the proof must carry the nonce this server provides; the response carries it in
 * `DPoP-Nonce` and the client retries with it.
 */
export class UseDpopNonceError extends OAuthError {
  readonly error = 'use_dpop_nonce'
  constructor(description: string, nonce: string) {
    super(description)
    this.headers['dpop-nonce'] = nonce
  }
}
