import { describe, expect, it } from 'vitest'
import { decodeNotice, encodeNotices } from '../src/notices.js'
import { BearerChallenges, bearerToken, failureBody } from '../src/bearer.js'
import { basicAuthorization, fromIntrospection } from '../src/introspection-source.js'
import { EventStreamParser, type StreamEvent } from '../src/revocation-stream-client.js'

describe('bearerToken (RFC 6750 2.1)', () => {
  it('reads the token after the Bearer scheme, in any case', () => {
    expect(bearerToken('Bearer gat_abc')).toBe('gat_abc')
    expect(bearerToken('bearer gat_abc')).toBe('gat_abc')
    expect(bearerToken('BEARER gat_abc ')).toBe('gat_abc')
  })

  it('sees no bearer credentials in other schemes or a bare scheme', () => {
    for (const h of [undefined, '', 'Bearer', 'Basic dXNlcjpwYXNz', 'Bearerx gat_abc', 'Token gat_abc']) {
      expect(bearerToken(h)).toBeUndefined()
    }
  })

  it('hands an empty token on as such (invalid, not missing)', () => {
    expect(bearerToken('Bearer ')).toBe('')
  })
})

describe('BearerChallenges (RFC 6750 3)', () => {
  const c = new BearerChallenges('api')

  it('challenges a request without credentials with no error code', () => {
    expect(c.missing).toMatchObject({ status: 401, error: undefined, wwwAuthenticate: 'Bearer realm="api"' })
    expect(failureBody(c.missing)).toBeUndefined()
  })

  it('names invalid_token and insufficient_scope with the scope', () => {
    expect(c.invalid.wwwAuthenticate).toMatch(/^Bearer realm="api", error="invalid_token", error_description="[^"]+"$/)
    const f = c.forbidden('write_teams')
    expect(f.status).toBe(403)
    expect(f.wwwAuthenticate).toMatch(/error="insufficient_scope", .*scope="write_teams"$/)
    expect(failureBody(f)).toEqual({ error: 'insufficient_scope', error_description: f.description, scope: 'write_teams' })
    expect(c.forbidden('write_teams')).toBe(f)
  })

  it('escapes quotes in the realm', () => {
    expect(new BearerChallenges('a "b"').missing.wwwAuthenticate).toBe('Bearer realm="a \\"b\\""')
  })
})

describe('introspection client', () => {
  it('form-encodes Basic credentials (RFC 6749 2.3.1)', () => {
    const header = basicAuthorization('id:1', 'se cret')
    expect(Buffer.from(header.slice(6), 'base64').toString()).toBe('id%3A1:se+cret')
  })

  it('reads an RFC 7662 response', () => {
    expect(fromIntrospection({ active: false })).toBeUndefined()
    expect(fromIntrospection({ active: true, sub: 'u', client_id: 'c', scope: 'read write', iat: 5, username: 'a@b' })).toEqual({
      kind: 'user',
      userId: 'u',
      subject: 'u',
      clientId: 'c',
      applicationId: null,
      username: 'a@b',
      scopes: ['read', 'write'],
      issuedAt: 5,
      expiresAt: null,
      jkt: null,
      audience: null,
    })
    // RFC 9068 §2.2: the client as `sub` is a machine token, without a user.
    expect(fromIntrospection({ active: true, sub: 'c', client_id: 'c', scope: 'read', iat: 5 })).toEqual({
      kind: 'client',
      userId: null,
      subject: 'c',
      clientId: 'c',
      applicationId: null,
      username: null,
      scopes: ['read'],
      issuedAt: 5,
      expiresAt: null,
      jkt: null,
      audience: null,
    })
    expect(() => fromIntrospection({ error: 'invalid_client' })).toThrow()
    expect(() => fromIntrospection({ active: true, sub: 'u' })).toThrow()
  })
})

describe('EventStreamParser (text/event-stream)', () => {
  it('splits events across chunk boundaries and line endings, skipping comments', () => {
    const events: StreamEvent[] = []
    const p = new EventStreamParser((e) => events.push(e))
    p.push('retry: 1000\n\nevent: ready\ndata:\n\n: ping\n\nevent: rev')
    p.push('oked\r\ndata: aa,bb\r\n\r')
    p.push('\ndata: one\ndata: two\n\n')
    expect(events).toEqual([
      { event: 'ready', data: '' },
      { event: 'revoked', data: 'aa,bb' },
      { event: 'message', data: 'one\ntwo' },
    ])
  })
})

describe('revocation notices', () => {
  it('carry client credential changes', () => {
    const [payload] = encodeNotices({ kind: 'client-credentials', clientId: 'abc_-1' })
    expect(payload).toBe('client:abc_-1')
    expect(decodeNotice(payload!)).toEqual({ kind: 'client-credentials', clientId: 'abc_-1' })
    expect(decodeNotice('client:')).toBeUndefined()
  })
})
