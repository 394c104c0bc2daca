import { describe, expect, it } from 'vitest'
import { InvalidTargetError } from '../../src/oauth/errors.js'
import {
  MAX_RESOURCES_PER_REQUEST,
  audienceTtlSeconds,
  canonicalIdentifier,
  identifierProblem,
  parseResources,
  withinAuthorized,
} from '../../src/oauth/resources/resource-indicators.js'

/* RFC 8707 §2 in memory: the form of `resource`, what an operator may declare, narrowing, lifetimes (docs/decisions/025-audiences.md). */

const PUBLIC = 'https://auth.example.com'

describe('parseResources', () => {
  it('sorts and dedupes absolute URIs; none sent is null', () => {
    expect(parseResources([])).toBeNull()
    expect(parseResources(['https://b.example/', 'https://a.example/', 'https://b.example/'])).toEqual([
      'https://a.example/',
      'https://b.example/',
    ])
    expect(parseResources(['urn:example:api'])).toEqual(['urn:example:api'])
  })

  it('normalises as URL parsing does, so one API named two ways is one identifier (as the verifier compares)', () => {
    expect(parseResources(['https://API.example.com', 'https://api.example.com:443/'])).toEqual(['https://api.example.com/'])
    expect(parseResources(['https://mcp.example.com/mcp', 'https://mcp.example.com/mcp/'])).toEqual([
      'https://mcp.example.com/mcp',
      'https://mcp.example.com/mcp/',
    ])
    expect(canonicalIdentifier('HTTPS://Api.Example.com/x')).toBe('https://api.example.com/x')
  })

  it('refuses a relative reference, a fragment, whitespace and too many, as invalid_target', () => {
    for (const bad of [['/api'], ['api.example.com'], ['https://a.example/#x'], ['https://a.example/ x'], ['']]) {
      expect(() => parseResources(bad), bad[0]).toThrow(InvalidTargetError)
    }
    const many = Array.from({ length: MAX_RESOURCES_PER_REQUEST + 1 }, (_, i) => `https://a${i}.example/`)
    expect(() => parseResources(many)).toThrow(InvalidTargetError)
  })
})

describe('identifierProblem', () => {
  it('accepts https URLs, and http loopback only under an http loopback PUBLIC_URL', () => {
    expect(identifierProblem('https://api.example.com/', PUBLIC)).toBeUndefined()
    expect(identifierProblem('https://mcp.example.com/mcp', PUBLIC)).toBeUndefined()
    expect(identifierProblem('http://localhost:8080/mcp', PUBLIC)).toMatch(/not an https URL/)
    expect(identifierProblem('http://localhost:8080/mcp', 'http://127.0.0.1:3000')).toBeUndefined()
    expect(identifierProblem('http://api.example.com/', 'http://127.0.0.1:3000')).toMatch(/not an https URL/)
    expect(identifierProblem('https://api.example.com/#x', PUBLIC)).toMatch(/fragment/)
    expect(identifierProblem('https://u:p@api.example.com/', PUBLIC)).toMatch(/credentials/)
    expect(identifierProblem('api.example.com', PUBLIC)).toMatch(/not an absolute URL/)
    expect(identifierProblem('urn:example:api', PUBLIC)).toMatch(/not an https URL/)
  })
})

describe('narrowing and lifetimes', () => {
  it('narrows within what was authorized; an authorization for none allows any', () => {
    expect(withinAuthorized(['a'], ['a', 'b'])).toBe(true)
    expect(withinAuthorized(['a', 'c'], ['a', 'b'])).toBe(false)
    expect(withinAuthorized(['c'], null)).toBe(true)
  })

  it("takes the client's lifetime, else the shortest of the servers', each the default unless set", () => {
    const settings = { defaultTtlSeconds: 3600 }
    expect(audienceTtlSeconds(900, [{ ttlSeconds: 60 }], settings)).toBe(900)
    expect(audienceTtlSeconds(null, [{ ttlSeconds: null }, { ttlSeconds: 600 }], settings)).toBe(600)
    expect(audienceTtlSeconds(null, [{ ttlSeconds: null }], settings)).toBe(3600)
  })
})
