import { describe, expect, it } from 'vitest'
import { InvalidRequestError, UnauthorizedClientError, UnsupportedResponseTypeError } from '../../src/oauth/errors.js'
import {
  checkResponseMode,
  checkResponseType,
  issuesAccessToken,
  issuesIdToken,
  responseModeFor,
} from '../../src/oauth/authorize/response-types.js'

const implicit = { allow_implicit: true }
const codeOnly = { allow_implicit: false }

describe('checkResponseType', () => {
  it('answers each offered type in one spelling, whatever the order sent (RFC 6749 3.1.1)', () => {
    expect(checkResponseType('code', codeOnly)).toBe('code')
    expect(checkResponseType('token', implicit)).toBe('token')
    expect(checkResponseType('id_token', implicit)).toBe('id_token')
    expect(checkResponseType('token id_token', implicit)).toBe('id_token token')
  })

  it('refuses hybrid types and unknown types, naming the offered ones', () => {
    expect(() => checkResponseType('code id_token', implicit)).toThrow(UnsupportedResponseTypeError)
    expect(() => checkResponseType('token code', implicit)).toThrow(/Hybrid/)
    expect(() => checkResponseType('device', implicit)).toThrow(UnsupportedResponseTypeError)
    expect(() => checkResponseType('device', implicit)).toThrow(/^response_type must be code, token, id_token or id_token token$/)
    expect(() => checkResponseType(undefined, implicit)).toThrow(InvalidRequestError)
  })

  it('lets only applications that allow the token flow answer in the browser', () => {
    expect(() => checkResponseType('token', codeOnly)).toThrow(UnauthorizedClientError)
    expect(() => checkResponseType('id_token', codeOnly)).toThrow(UnauthorizedClientError)
  })
})

describe('response modes', () => {
  it('defaults to the query for code and to the fragment for anything with a token in it', () => {
    expect(responseModeFor('code', undefined)).toBe('query')
    expect(responseModeFor('token', undefined)).toBe('fragment')
    expect(responseModeFor('id_token token', undefined)).toBe('fragment')
    expect(responseModeFor('code', 'form_post')).toBe('form_post')
  })

  it('sends errors in the default mode when response_mode is unknown or would put a token in the query', () => {
    expect(responseModeFor('token', 'query')).toBe('fragment')
    expect(responseModeFor('code', 'web_message')).toBe('query')
    expect(responseModeFor(undefined, undefined)).toBe('query')
  })

  it('refuses an unknown mode, and the query for a token or an ID Token (Multiple Response Type Encoding Practices 5)', () => {
    expect(() => checkResponseMode('code', 'web_message')).toThrow(InvalidRequestError)
    expect(() => checkResponseMode('id_token', 'query')).toThrow('response_mode=query is not allowed with response_type=id_token')
    expect(checkResponseMode('id_token', 'form_post')).toBe('form_post')
    expect(checkResponseMode('code', 'fragment')).toBe('fragment')
  })
})

it('says which response types carry an access token and which an ID Token', () => {
  expect(['code', 'token', 'id_token', 'id_token token'].map((t) => [issuesAccessToken(t as never), issuesIdToken(t as never)])).toEqual([
    [false, false],
    [true, false],
    [false, true],
    [true, true],
  ])
})
