import { describe, expect, it } from 'vitest'
import { BearerChallenges, DpopChallenges, dpopToken, failureBody } from '../src/bearer.js'
import { DPOP_SIGNING_ALGS } from '../src/dpop.js'
import { MemoryReplayCache, requestUrl, singleProof } from '../src/presentation.js'

const ALGS = `algs="${DPOP_SIGNING_ALGS.join(' ')}"`

describe('dpopToken (RFC 9449 §7.1)', () => {
  it('reads the token after the DPoP scheme, in any case, and nothing of other schemes', () => {
    expect(dpopToken('DPoP gat_abc')).toBe('gat_abc')
    expect(dpopToken('dpop gat_abc ')).toBe('gat_abc')
    for (const h of [undefined, '', 'DPoP', 'Bearer gat_abc', 'DPoPx gat_abc']) expect(dpopToken(h)).toBeUndefined()
  })
})

describe('the challenges of a verifier that accepts DPoP', () => {
  it('offers DPoP beside every Bearer challenge, and only when asked to', () => {
    const c = new BearerChallenges('api', true)
    expect(c.missing.wwwAuthenticate).toBe(`Bearer realm="api", DPoP ${ALGS}`)
    expect(c.boundAsBearer.wwwAuthenticate).toMatch(
      new RegExp(`^Bearer realm="api", error="invalid_token", error_description="[^"]+", DPoP ${ALGS}$`),
    )
    expect(c.forbidden('read').wwwAuthenticate).toMatch(new RegExp(`scope="read", DPoP ${ALGS}$`))
    expect(new BearerChallenges('api').boundAsBearer.wwwAuthenticate).not.toContain('algs=')
  })

  it('answers a DPoP request with the DPoP challenge alone, its description free of quotes (RFC 6750 3)', () => {
    const c = new DpopChallenges()
    const proof = c.proof('The DPoP proof\'s "htu" is not this request\'s URL')
    expect(proof).toMatchObject({ status: 401, error: 'invalid_dpop_proof' })
    expect(proof.wwwAuthenticate).toBe(
      `DPoP error="invalid_dpop_proof", error_description="The DPoP proof's 'htu' is not this request's URL", ${ALGS}`,
    )
    expect(failureBody(proof)).toEqual({
      error: 'invalid_dpop_proof',
      error_description: 'The DPoP proof\'s "htu" is not this request\'s URL',
    })
    expect(c.forbidden('write')).toMatchObject({ status: 403, error: 'insufficient_scope', scope: 'write' })
    expect(c.forbidden('write')).toBe(c.forbidden('write'))
  })
})

describe('singleProof (RFC 9449 §4.3 step 1)', () => {
  it('takes exactly one DPoP header', () => {
    expect(singleProof(undefined)).toBeUndefined()
    expect(singleProof([])).toBeUndefined()
    expect(singleProof('a.b.c')).toBe('a.b.c')
    expect(singleProof(['a.b.c'])).toBe('a.b.c')
    expect(singleProof(['a.b.c', 'd.e.f'])).toBeNull()
    // node:http joins a repeated header with ", ".
    expect(singleProof('a.b.c, d.e.f')).toBeNull()
  })
})

describe('MemoryReplayCache', () => {
  it('accepts a key once until it expires, and stays bounded', () => {
    let now = 1_000_000
    const cache = new MemoryReplayCache(2, () => now)
    expect(cache.remember('k j1', 1060)).toBe(true)
    expect(cache.remember('k j1', 1060)).toBe(false)
    now = 1_060_000
    expect(cache.remember('k j1', 1120)).toBe(true)
    cache.remember('k j2', 1120)
    cache.remember('k j3', 1120)
    expect(cache.size).toBe(2)
  })
})

describe('requestUrl', () => {
  it('resolves a path against the public origin first, then the request origin; an absolute URL stays', () => {
    expect(requestUrl('/me?x=1', 'https://api.example.com', 'http://10.0.0.1:8080')).toBe('https://api.example.com/me?x=1')
    expect(requestUrl('/me', undefined, 'http://10.0.0.1:8080')).toBe('http://10.0.0.1:8080/me')
    expect(requestUrl('https://a.test/me', 'https://b.test', undefined)).toBe('https://a.test/me')
  })
})
