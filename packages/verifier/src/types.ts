/** What a valid access token grants: what the verifier hands to a route handler. */
export interface VerifiedToken {
  /**
   * `user`: issued for a user who consented. `client`: issued to a machine application for
   * itself by the client credentials grant (RFC 6749 §4.4); no user stands behind it.
   */
  readonly kind: 'user' | 'client'
  /** The resource owner (users.id, `resource_owner_id` in token info); null for a `client` token. */
  readonly userId: string | null
  /**
   * `sub` in introspection: the user's id, or for a `client` token its client_id, as RFC 9068
   * §2.2 has it for tokens without a resource owner.
   */
  readonly subject: string
  /** The application the token was issued to, by its public client_id. */
  readonly clientId: string
  /** The application's internal id: known in database mode, null over introspection. */
  readonly applicationId: string | null
  /** The user's email (`username` in introspection); null for a `client` token. */
  readonly username: string | null
  /** Granted scopes. Check them with `hasScope`, which knows that `write` implies `write_*`. */
  readonly scopes: readonly string[]
  /** When the token was issued, in seconds since the epoch (`iat`). */
  readonly issuedAt: number
  /**
   * When it stops being valid, in seconds since the epoch (`exp`); null for a token valid until
   * revoked, Gatehouse's default. The owner of the application chose expiring tokens otherwise.
   */
  readonly expiresAt: number | null
  /**
   * RFC 9449 §6.1: the SHA-256 JWK thumbprint of the key the token is bound to (`cnf.jkt`);
   * null for a bearer token. A bound token is accepted only as `Authorization: DPoP` with a
   * proof signed by that key.
   */
  readonly jkt: string | null
  /**
   * RFC 8707: the resource identifiers the token was minted for (`aud`, RFC 7519 §4.1.3), a
   * frozen array; null for a token without an audience, which any resource server of Gatehouse
   * accepts as before.
   */
  readonly audience: readonly string[] | null
}

export type VerifyFailure = {
  readonly ok: false
  /** 401: missing or invalid token; 403: insufficient scope; 503: the token could not be checked. */
  readonly status: 401 | 403 | 503
  /**
   * RFC 6750 3.1 code, or RFC 9449 §7.1's `invalid_dpop_proof`; undefined when the request
   * carried no token at all (RFC 6750 3.1).
   */
  readonly error: 'invalid_token' | 'invalid_dpop_proof' | 'insufficient_scope' | 'temporarily_unavailable' | undefined
  readonly description: string
  /** The `WWW-Authenticate` value to send (RFC 6750 3, RFC 9449 §7.1); undefined for 503. */
  readonly wwwAuthenticate: string | undefined
  /** The scope that was required, for 403. */
  readonly scope: string | undefined
}

export type VerifyResult = { readonly ok: true; readonly token: VerifiedToken } | VerifyFailure

/**
 * What the request-level check reads of an HTTP request. The adapters fill it in; a service on
 * another framework builds it from its request.
 */
export interface ResourceRequest {
  /** The Authorization header. */
  readonly authorization: string | undefined
  /** The DPoP header: node joins a repeated header with ", ", which is refused like an array of two. */
  readonly dpop: string | readonly string[] | undefined
  /** The request's method, as sent (`htm`, RFC 9449 §4.2). */
  readonly method: string
  /**
   * The request target: an absolute URL, or a path with its query (`req.url`), which is
   * resolved against the verifier's `publicOrigin` or else `origin`.
   */
  readonly url: string
  /**
   * The origin the request was received at (`https://api.example.com`), from the Host header:
   * used only without the verifier's `publicOrigin`, which a service behind a proxy should set.
   */
  readonly origin?: string
}
