/*
 * What the authorize request supports, as metadata (RFC 8414 2, RFC 9126 5, OpenID Connect
 * Discovery 1.0 3): one source for the RFC 8414 document and the OpenID discovery document.
 */

/** The response modes GET /oauth/authorize speaks (src/oauth/authorize/authorize-request.ts). */
export const RESPONSE_MODES_SUPPORTED = ['query', 'fragment', 'form_post'] as const

/**
 * The response types GET /oauth/authorize answers (src/oauth/authorize/response-types.ts). Hybrid
 * types (code with id_token or token, OpenID Connect Core 3.3) are not offered: they are refused
 * with unsupported_response_type.
 */
const RESPONSE_TYPES_SUPPORTED = ['code', 'token', 'id_token', 'id_token token'] as const

/** The PAR endpoint's path (RFC 9126 2). */
export const PAR_PATH = '/oauth/par'

export function authorizeRequestMetadata(issuer: string) {
  return {
    response_types_supported: [...RESPONSE_TYPES_SUPPORTED],
    response_modes_supported: [...RESPONSE_MODES_SUPPORTED],
    pushed_authorization_request_endpoint: `${issuer}${PAR_PATH}`,
    // RFC 9126 5: true only if every client had to push; each application decides for itself.
    require_pushed_authorization_requests: false,
    // OpenID Connect Discovery 3: request objects are refused (request_not_supported).
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
  } as const
}
