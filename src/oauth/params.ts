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

export interface ParamReading {
  /** The usable parameters: every single, clean string value. */
  params: Params
  /** Parameters that broke a rule, in the order they were sent. */
  problems: Array<{ name: string; problem: ParamProblem }>
  /** The input was neither absent nor an object of parameters. */
  notAnObject: boolean
}

/** Reads parameters without throwing, so each endpoint decides what a problem means for it. */
export function readParams(input: unknown): ParamReading {
  const reading: ParamReading = { params: {}, problems: [], notAnObject: false }
  if (input === undefined || input === null) return reading
  if (typeof input !== 'object' || Array.isArray(input)) return { ...reading, notAnObject: true }
  for (const [name, value] of Object.entries(input as Record<string, unknown>)) {
    if (Array.isArray(value)) reading.problems.push({ name, problem: 'repeated' })
    else if (typeof value !== 'string') reading.problems.push({ name, problem: 'not-a-string' })
    else if (hasControlCharacter(value)) reading.problems.push({ name, problem: 'control-character' })
    else reading.params[name] = value
  }
  return reading
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
  const r = readParams(input)
  if (r.notAnObject) throw new InvalidRequestError('The request body must be an object of parameters')
  const first = r.problems[0]
  if (first !== undefined) throw new InvalidRequestError(describeProblem(first.name, first.problem))
  return r.params
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
