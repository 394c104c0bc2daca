import { InvalidRequestError, UnauthorizedClientError, UnsupportedResponseTypeError } from '../errors.js'
import type { ResponseMode } from '../clients/redirect-uri.js'

/*
 * The response types and response modes an authorize request may ask for (RFC 6749 3.1.1;
 * OpenID Connect Core 3; OAuth 2.0 Multiple Response Type Encoding Practices; OAuth 2.0 Form
 * Post Response Mode), and which mode an answer or an error travels in.
 */

const RESPONSE_MODES: readonly string[] = ['query', 'fragment', 'form_post']

/**
 * The response types answered (RFC 6749 3.1.1; OpenID Connect Core 3.2.2.1 for `id_token` and
 * `id_token token`), each written with its values in one order: the order sent does not matter
 * (RFC 6749 3.1.1), so "token id_token" is `id_token token`. Hybrid types are not offered
 * (docs/openid-connect.md).
 */
export type ResponseType = 'code' | 'token' | 'id_token' | 'id_token token'

/** Whether the response carries an access token: the token flow and `id_token token`. */
export function issuesAccessToken(responseType: ResponseType): boolean {
  return responseType === 'token' || responseType === 'id_token token'
}

/** Whether the response carries an ID Token (OpenID Connect Core 3.2.2.5). */
export function issuesIdToken(responseType: ResponseType): boolean {
  return responseType === 'id_token' || responseType === 'id_token token'
}

/** The values of a response_type, sorted and joined again by one space. */
function canonicalResponseType(sent: string): string {
  return sent.split(' ').sort().join(' ')
}

/** OpenID Connect Core 3.3: code with id_token or token. */
const HYBRID_TYPES: ReadonlySet<string> = new Set(['code id_token', 'code token', 'code id_token token'])

/**
 * Whether the response type answers in the fragment by default and never in the query: any type
 * with a token or an ID Token in it (OAuth 2.0 Multiple Response Type Encoding Practices 2.1, 3,
 * 5), since logs, histories and Referer headers keep a query.
 */
function fragmentOnly(responseType: string | undefined): boolean {
  if (responseType === undefined) return false
  const values = responseType.split(' ')
  return values.includes('token') || values.includes('id_token')
}

/**
 * The mode an error travels in: response_mode when it is one this server speaks and allowed for
 * the response type, else the type's default (OAuth 2.0 Multiple Response Type Encoding
 * Practices 2.1; RFC 6749 4.2.2.1: token-flow errors travel in the fragment like its responses).
 */
export function responseModeFor(responseType: string | undefined, sent: string | undefined): ResponseMode {
  const inFragment = fragmentOnly(responseType)
  const fallback = inFragment ? 'fragment' : 'query'
  if (sent === undefined || !RESPONSE_MODES.includes(sent) || (sent === 'query' && inFragment)) return fallback
  return sent as ResponseMode
}

/** response_mode, checked; throws the error the client is sent. */
export function checkResponseMode(responseType: ResponseType, sent: string | undefined): ResponseMode {
  if (sent !== undefined && !RESPONSE_MODES.includes(sent)) {
    throw new InvalidRequestError('response_mode must be query, fragment or form_post')
  }
  // Multiple Response Type Encoding Practices 2.1, 5: a token or an ID Token never travels in
  // the query, where logs, histories and Referer headers keep it.
  if (sent === 'query' && fragmentOnly(responseType))
    throw new InvalidRequestError(`response_mode=query is not allowed with response_type=${responseType}`)
  return responseModeFor(responseType, sent)
}

/** The response types answered, as an error description names them. */
const OFFERED = 'code, token, id_token or id_token token'

/**
 * response_type (RFC 6749 3.1.1), in its one spelling; throws the error the client is sent.
 * Everything but code answers in the browser, which only applications that allow the token flow
 * may use.
 */
export function checkResponseType(sent: string | undefined, application: { allow_implicit: boolean }): ResponseType {
  if (!sent) throw new InvalidRequestError(`response_type is required: ${OFFERED}`)
  const responseType = canonicalResponseType(sent)
  if (responseType === 'code') return responseType
  if (HYBRID_TYPES.has(responseType)) {
    throw new UnsupportedResponseTypeError(`Hybrid response types are not offered: response_type must be ${OFFERED}`)
  }
  if (responseType !== 'token' && responseType !== 'id_token' && responseType !== 'id_token token') {
    throw new UnsupportedResponseTypeError(`response_type must be ${OFFERED}`)
  }
  if (!application.allow_implicit) throw new UnauthorizedClientError(`This application may not use response_type=${responseType}`)
  return responseType
}
