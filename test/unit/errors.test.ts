import { describe, expect, it } from 'vitest'
import {
  AccessDeniedError,
  InvalidClientError,
  InvalidGrantError,
  InvalidRequestError,
  InvalidScopeError,
  MAX_ERROR_DESCRIPTION,
  ServerError,
  SlowDownError,
  TemporarilyUnavailableError,
  UnauthorizedClientError,
  UnsupportedGrantTypeError,
  UnsupportedResponseTypeError,
  toErrorDescription,
} from '../../src/oauth/errors.js'

/** RFC 6749 4.1.2.1, 4.2.2.1, 5.2: error_description = 1*( %x20-21 / %x23-5B / %x5D-7E ). */
const RFC_6749_DESCRIPTION = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

describe('error_description carries only the characters RFC 6749 allows', () => {
  const hostile = 'scope x"\\ NUL\u0000 CR\r LF\n DEL\u007f é 一 😀 lone\ud800 end'

  it('replaces quotes with apostrophes and every other character outside the set with ?', () => {
    expect(toErrorDescription('Unknown scope "x"\\')).toBe("Unknown scope 'x'?")
    expect(toErrorDescription('a\u0000b\u00e9c\u4e00d\u{1f600}e')).toBe('a?b?c?d?e')
    expect(toErrorDescription(hostile)).toMatch(RFC_6749_DESCRIPTION)
  })

  it('keeps ordinary messages as they are', () => {
    const plain = 'code_verifier must be 43-128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636 4.1); see [docs] {x} | ok!'
    expect(toErrorDescription(plain)).toBe(plain)
  })

  it('cuts very long descriptions', () => {
    const cut = toErrorDescription('x'.repeat(5000))
    expect(cut).toHaveLength(MAX_ERROR_DESCRIPTION)
    expect(cut.endsWith('...')).toBe(true)
  })

  it.each([
    ['InvalidRequestError', new InvalidRequestError(hostile)],
    ['InvalidClientError', new InvalidClientError(hostile, true)],
    ['InvalidGrantError', new InvalidGrantError(hostile)],
    ['UnauthorizedClientError', new UnauthorizedClientError(hostile)],
    ['UnsupportedGrantTypeError', new UnsupportedGrantTypeError(hostile)],
    ['UnsupportedResponseTypeError', new UnsupportedResponseTypeError(hostile)],
    ['InvalidScopeError', new InvalidScopeError(hostile)],
    ['AccessDeniedError', new AccessDeniedError(hostile)],
    ['SlowDownError', new SlowDownError(hostile, 5)],
    ['ServerError', new ServerError(hostile)],
    ['TemporarilyUnavailableError', new TemporarilyUnavailableError(hostile, 1)],
  ])('%s holds to it whatever it is given', (_name, error) => {
    expect(error.description).toMatch(RFC_6749_DESCRIPTION)
    expect(error.toJSON().error_description).toBe(error.description)
    expect(error.message).toBe(error.description)
  })
})
