import { hasControlCharacter } from '../lib/text.js'
import { InvalidClientError, InvalidRequestError } from './errors.js'

/*
 * The one reader of OAuth request parameters, for every endpoint: authorize, token, revoke,
 * introspect and the client credentials of HTTP Basic. The rules live here once:
 *   - each parameter at most once (RFC 6749 3.1, 3.2); query and form parsers hand repeated
 *     keys over as arrays, and a JSON body may carry any type: both are refused;
 *   - values are strings without control characters (Cc, src/lib/text.ts): no RFC 6749
 *     parameter may carry one (Appendix A restricts each to VSCHAR, NQCHAR or NQSCHAR), and
 *     PostgreSQL refuses U+0000 in text, so they are stopped before any value is used;
 *   - an empty value counts as absent (3.1).
 */
export type Params = Record<string, string>

export type ParamProblem = 'repeated' | 'not-a-string' | 'control-character'

/**
 * RFC 8707 §2: the one parameter that may be repeated, once per resource the token is for. Its
 * values are read into `resources`, never into `params`, so no endpoint can mistake one of them
 * for the only one.
 */
export const RESOURCE_PARAM = 'resource'

export interface ParamReading {
  /** The usable parameters: every single, clean string value. */
  params: Params
  /** Every non-empty `resource` value, in the order sent (RFC 8707 §2); each held to the same rules. */
  resources: string[]
  /** Parameters that broke a rule, in the order they were sent. */
  problems: Array<{ name: string; problem: ParamProblem }>
  /** The input was neither absent nor an object of parameters. */
  notAnObject: boolean
}

/** Reads parameters without throwing, so each endpoint decides what a problem means for it. */
export function readParams(input: unknown): ParamReading {
  const reading: ParamReading = { params: {}, resources: [], problems: [], notAnObject: false }
  if (input === undefined || input === null) return reading
  if (typeof input !== 'object' || Array.isArray(input)) return { ...reading, notAnObject: true }
  for (const [name, value] of Object.entries(input as Record<string, unknown>)) {
    if (name === RESOURCE_PARAM) readResources(reading, value)
    else if (Array.isArray(value)) reading.problems.push({ name, problem: 'repeated' })
    else if (typeof value !== 'string') reading.problems.push({ name, problem: 'not-a-string' })
    else if (hasControlCharacter(value)) reading.problems.push({ name, problem: 'control-character' })
    else reading.params[name] = value
  }
  return reading
}

function readResources(reading: ParamReading, value: unknown): void {
  for (const v of Array.isArray(value) ? (value as unknown[]) : [value]) {
    if (typeof v !== 'string') reading.problems.push({ name: RESOURCE_PARAM, problem: 'not-a-string' })
    else if (hasControlCharacter(v)) reading.problems.push({ name: RESOURCE_PARAM, problem: 'control-character' })
    else if (v !== '') reading.resources.push(v)
  }
}

/**
 * A parameter named in an error message. Names come from the request too, so only one shaped
 * like RFC 6749's own (Appendix A) is repeated; the value never is (see toErrorDescription).
 */
function parameterSubject(name: string): string {
  return /^[A-Za-z0-9_.-]{1,64}$/.test(name) ? `The parameter ${name}` : 'A parameter with an unusual name'
}

export function describeProblem(name: string, problem: ParamProblem): string {
  switch (problem) {
    case 'repeated':
      return `${parameterSubject(name)} was sent more than once`
    case 'not-a-string':
      return `${parameterSubject(name)} must be a string`
    case 'control-character':
      return `${parameterSubject(name)} contains a control character`
  }
}

/** The parameters, or invalid_request naming the first offending one. */
export function singleParams(input: unknown): Params {
  return checkedParams(input).params
}

/** The parameters with the `resource` values (RFC 8707 §2), or invalid_request naming the first offending one. */
export function checkedParams(input: unknown): { params: Params; resources: string[] } {
  const r = readParams(input)
  if (r.notAnObject) throw new InvalidRequestError('The request body must be an object of parameters')
  const first = r.problems[0]
  if (first !== undefined) throw new InvalidRequestError(describeProblem(first.name, first.problem))
  return { params: r.params, resources: r.resources }
}

/**
 * Token and revocation parameters: from the body, or from the query string when the body is
 * empty (the spec's clients send `POST /oauth/token?…` with Content-Length 0). Never a mix,
 * so a value cannot be overridden from the other source.
 */
export function requestParams(body: unknown, query: unknown): Params {
  return requestReading(body, query).params
}

/** requestParams with the `resource` values (RFC 8707 §2), from the same source. */
export function requestReading(body: unknown, query: unknown): { params: Params; resources: string[] } {
  const fromBody = checkedParams(body)
  const fromQuery = checkedParams(query)
  const hasBody = Object.keys(fromBody.params).length > 0 || fromBody.resources.length > 0
  const hasQuery = Object.keys(fromQuery.params).length > 0 || fromQuery.resources.length > 0
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
  if (v === undefined) throw new InvalidRequestError(`${parameterSubject(name)} is required`)
  return v
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** RFC 6749 2.3.1: the Basic user and password are form-urlencoded before base64. */
function formDecode(s: string): string | undefined {
  try {
    const decoded = decodeURIComponent(s.replace(/\+/g, ' '))
    return hasControlCharacter(decoded) ? undefined : decoded
  } catch {
    return undefined
  }
}

/**
 * Client credentials of an `Authorization: Basic` header (RFC 7617, RFC 6749 2.3.1), held to the
 * same rules as parameters; invalid_client when they cannot be read (RFC 6749 5.2).
 */
export function basicCredentials(header: string): { id: string; secret: string } {
  const m = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(header.trim())
  let decoded: string | undefined
  try {
    decoded = m ? utf8.decode(Buffer.from(m[1]!, 'base64')) : undefined
  } catch {
    decoded = undefined
  }
  const colon = decoded?.indexOf(':') ?? -1
  const id = decoded !== undefined && colon > 0 ? formDecode(decoded.slice(0, colon)) : undefined
  const secret = decoded !== undefined && colon > 0 ? formDecode(decoded.slice(colon + 1)) : undefined
  if (id === undefined || id === '' || secret === undefined) throw new InvalidClientError('Malformed HTTP Basic credentials', true)
  return { id, secret }
}
