import { InvalidRequestError } from './errors.js'

/*
 * Request parameters as the RFCs define them: each at most once (RFC 6749 3.1, 3.2), strings
 * only. Query and form parsers hand repeated keys over as arrays; JSON bodies may carry any
 * type. Both are refused here, before any value is used.
 */
export type Params = Record<string, string>

export type ParamCheck = { ok: true; params: Params } | { ok: false; repeated?: string; invalid?: string }

export function checkParams(input: unknown): ParamCheck {
  if (input === undefined || input === null) return { ok: true, params: {} }
  if (typeof input !== 'object' || Array.isArray(input)) return { ok: false, invalid: '(body)' }
  const params: Params = {}
  for (const [key, value] of Object.entries(input as Record<string, unknown>)) {
    if (Array.isArray(value)) return { ok: false, repeated: key }
    if (typeof value !== 'string') return { ok: false, invalid: key }
    params[key] = value
  }
  return { ok: true, params }
}

/** Like checkParams, but throws invalid_request naming the offending parameter. */
export function singleParams(input: unknown): Params {
  const r = checkParams(input)
  if (r.ok) return r.params
  if (r.repeated) throw new InvalidRequestError(`The parameter "${r.repeated}" was sent more than once`)
  throw new InvalidRequestError(r.invalid === '(body)' ? 'The request body must be an object of parameters' : `The parameter "${r.invalid}" must be a string`)
}

/**
 * Token and revocation parameters: from the body, or from the query string when the body is
 * empty (the spec's clients send `POST /oauth/token?…` with Content-Length 0). Never a mix,
 * so a value cannot be overridden from the other source.
 */
export function requestParams(body: unknown, query: unknown): Params {
  const fromBody = singleParams(body)
  const fromQuery = singleParams(query)
  const hasBody = Object.keys(fromBody).length > 0
  const hasQuery = Object.keys(fromQuery).length > 0
  if (hasBody && hasQuery) throw new InvalidRequestError('Send the parameters in the body or in the query string, not both')
  return hasBody ? fromBody : fromQuery
}

/** A present, non-empty parameter; RFC 6749 treats empty values as omitted (3.1). */
export function optional(params: Params, name: string): string | undefined {
  const v = params[name]
  return v === undefined || v === '' ? undefined : v
}

export function required(params: Params, name: string): string {
  const v = optional(params, name)
  if (v === undefined) throw new InvalidRequestError(`The parameter "${name}" is required`)
  return v
}
