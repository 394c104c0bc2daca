import { describe, expect, it } from 'vitest'
import { extractClientCredentials } from '../../src/oauth/token/client-auth.js'
import { InvalidClientError, InvalidRequestError } from '../../src/oauth/errors.js'
import { basicCredentials, optional, readParams, requestParams, requestReading, required, singleParams } from '../../src/oauth/params.js'

const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`

describe('parameter parsing (RFC 6749 3.1: no parameter more than once)', () => {
  it('accepts single string values, and nothing at all', () => {
    expect(singleParams({ a: '1', b: '' })).toEqual({ a: '1', b: '' })
    expect(singleParams(undefined)).toEqual({})
    expect(singleParams(null)).toEqual({})
  })

  it('refuses repeated parameters (parsers hand them over as arrays)', () => {
    expect(readParams({ code: ['a', 'b'] }).problems).toEqual([{ name: 'code', problem: 'repeated' }])
    expect(() => singleParams({ code: ['a', 'b'] })).toThrow(/The parameter code was sent more than once/)
  })

  it('refuses non-string JSON values and non-object bodies', () => {
    expect(() => singleParams({ code: 1 })).toThrow(/The parameter code must be a string/)
    expect(() => singleParams({ code: { a: 1 } })).toThrow(InvalidRequestError)
    expect(() => singleParams({ code: null })).toThrow(InvalidRequestError)
    expect(() => singleParams(['a'])).toThrow(/object of parameters/)
    expect(() => singleParams('code=x')).toThrow(InvalidRequestError)
  })

  it('takes the body, or else the query string, never a mix', () => {
    expect(requestParams({ code: 'b' }, {})).toEqual({ code: 'b' })
    expect(requestParams(undefined, { code: 'q' })).toEqual({ code: 'q' })
    expect(requestParams({}, { code: 'q' })).toEqual({ code: 'q' })
    expect(() => requestParams({ code: 'b' }, { client_id: 'q' })).toThrow(/not both/)
  })

  it('treats empty values as absent', () => {
    expect(optional({ a: '' }, 'a')).toBeUndefined()
    expect(optional({ a: 'x' }, 'a')).toBe('x')
    expect(() => required({ a: '' }, 'a')).toThrow(/The parameter a is required/)
  })
})

describe('extractClientCredentials (RFC 6749 2.3.1)', () => {
  it('reads client_id and client_secret parameters', () => {
    expect(extractClientCredentials({ client_id: 'c', client_secret: 's' }, undefined)).toEqual({
      clientId: 'c',
      clientSecret: 's',
      usedBasic: false,
    })
  })

  it('reads HTTP Basic, form-decoding both parts', () => {
    expect(extractClientCredentials({}, basic('c%3Aid', 's%2B+x'))).toEqual({ clientId: 'c:id', clientSecret: 's+ x', usedBasic: true })
    expect(extractClientCredentials({}, basic('c', 'a:b'))).toMatchObject({ clientSecret: 'a:b' })
    expect(extractClientCredentials({ client_id: 'c' }, basic('c', 's'))).toMatchObject({ clientId: 'c', usedBasic: true })
  })

  it('refuses two methods at once and a mismatching client_id', () => {
    expect(() => extractClientCredentials({ client_secret: 's' }, basic('c', 's'))).toThrow(InvalidRequestError)
    expect(() => extractClientCredentials({ client_id: 'other' }, basic('c', 's'))).toThrow(InvalidRequestError)
  })

  it('answers missing or malformed credentials with invalid_client', () => {
    expect(() => extractClientCredentials({}, undefined)).toThrow(InvalidClientError)
    // A client_id alone is a public client's request (RFC 6749 2.1); verifyClient refuses it for any other.
    expect(extractClientCredentials({ client_id: 'c' }, undefined)).toEqual({ clientId: 'c', clientSecret: undefined, usedBasic: false })
    expect(() => extractClientCredentials({}, 'Basic !!!')).toThrow(InvalidClientError)
    expect(() => extractClientCredentials({}, `Basic ${Buffer.from('nocolon').toString('base64')}`)).toThrow(InvalidClientError)
    expect(() => extractClientCredentials({}, basic('%zz', 's'))).toThrow(InvalidClientError)
    try {
      extractClientCredentials({}, 'Basic !!!')
    } catch (e) {
      expect((e as InvalidClientError).headers['www-authenticate']).toMatch(/^Basic/)
    }
  })

  it('ignores other authorization schemes', () => {
    expect(extractClientCredentials({ client_id: 'c', client_secret: 's' }, 'Bearer abc')).toMatchObject({ usedBasic: false })
  })
})

describe('resource (RFC 8707 §2), the one parameter that may be repeated', () => {
  it('reads one or several values apart from the other parameters, held to the same rules', () => {
    expect(readParams({ resource: 'https://a.example/', scope: 'read' })).toMatchObject({
      params: { scope: 'read' },
      resources: ['https://a.example/'],
      problems: [],
    })
    expect(readParams({ resource: ['https://a.example/', '', 'https://b.example/'] }).resources).toEqual([
      'https://a.example/',
      'https://b.example/',
    ])
    expect(readParams({ resource: ['ok', 'x\u0000'] }).problems).toEqual([{ name: 'resource', problem: 'control-character' }])
    expect(readParams({ resource: [1] }).problems).toEqual([{ name: 'resource', problem: 'not-a-string' }])
    expect(singleParams({ resource: ['a', 'b'], code: 'c' })).toEqual({ code: 'c' })
    expect(requestReading({ resource: ['a', 'b'] }, {})).toEqual({ params: {}, resources: ['a', 'b'] })
    expect(() => requestReading({ resource: 'a' }, { code: 'q' })).toThrow(InvalidRequestError)
  })
})

describe('one set of rules for every parameter', () => {
  it('refuses control characters, which no OAuth parameter may carry (RFC 6749 Appendix A)', () => {
    expect(readParams({ client_id: 'a\u0000b', state: 'ok' })).toEqual({
      params: { state: 'ok' },
      resources: [],
      problems: [{ name: 'client_id', problem: 'control-character' }],
      notAnObject: false,
    })
    expect(() => singleParams({ token: 'x\ny' })).toThrow(/The parameter token contains a control character/)
    expect(() => requestParams(undefined, { client_id: '\u007f' })).toThrow(InvalidRequestError)
    expect(singleParams({ state: 'tab-free ünïcode' })).toEqual({ state: 'tab-free ünïcode' })
  })

  it('names a parameter in an error only when its name is one a client would send', () => {
    expect(() => singleParams({ client_id: 'a\u0000' })).toThrow(/^The parameter client_id contains a control character$/)
    expect(() => singleParams({ 'a"\\': 'a\u0000' })).toThrow(/^A parameter with an unusual name contains a control character$/)
    expect(() => singleParams({ ['x'.repeat(65)]: ['1', '2'] })).toThrow(/^A parameter with an unusual name was sent more than once$/)
  })

  it('reads HTTP Basic credentials under the same rules (RFC 6749 2.3.1)', () => {
    expect(basicCredentials(basic('my%20app', 'p%3Ass'))).toEqual({ id: 'my app', secret: 'p:ss' })
    const notUtf8 = `Basic ${Buffer.from([0x61, 0xff, 0x3a, 0x62]).toString('base64')}`
    expect(() => basicCredentials(notUtf8)).toThrow(InvalidClientError)
    expect(() => basicCredentials(basic('a%00b', 'secret'))).toThrow(InvalidClientError)
    expect(() => basicCredentials(basic('', 'secret'))).toThrow(InvalidClientError)
    expect(() => basicCredentials('Basic not base64!')).toThrow(InvalidClientError)
  })
})
