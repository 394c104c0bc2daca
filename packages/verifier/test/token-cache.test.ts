import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { formatAccessToken, sha256Hex as digest } from '../src/token-format.js'
import { TokenCache } from '../src/token-cache.js'
import { TtlLru } from '../src/ttl-lru.js'
import type { VerifiedToken } from '../src/types.js'

const generateAccessToken = () => formatAccessToken(randomBytes(32).toString('base64url'))

describe('TtlLru', () => {
  it('evicts the least recently used entry when full', () => {
    const lru = new TtlLru<number>(3)
    lru.set('a', 1, 100)
    lru.set('b', 2, 100)
    lru.set('c', 3, 100)
    expect(lru.get('a', 0)).toBe(1) // a is now the most recent; b the least
    lru.set('d', 4, 100)
    expect(lru.size).toBe(3)
    expect(lru.get('b', 0)).toBeUndefined()
    expect([lru.get('a', 0), lru.get('c', 0), lru.get('d', 0)]).toEqual([1, 3, 4])
  })

  it('expires entries at their deadline', () => {
    const lru = new TtlLru<string>(10)
    lru.set('k', 'v', 1000)
    expect(lru.get('k', 999)).toBe('v')
    expect(lru.get('k', 1000)).toBeUndefined()
    expect(lru.size).toBe(0)
  })

  it('replaces a value in place, and deletes by key or by predicate', () => {
    const lru = new TtlLru<number>(10)
    for (let i = 0; i < 6; i++) lru.set(`k${i}`, i, 100)
    lru.set('k0', 10, 100)
    expect(lru.get('k0', 0)).toBe(10)
    expect(lru.delete('k1')).toBe(true)
    expect(lru.delete('k1')).toBe(false)
    expect(lru.deleteWhere((v) => v % 2 === 0)).toBe(3) // 10, 2, 4
    expect(lru.size).toBe(2)
    expect([lru.get('k3', 0), lru.get('k5', 0)]).toEqual([3, 5])
    lru.clear()
    expect(lru.size).toBe(0)
    lru.set('again', 1, 100)
    expect(lru.get('again', 0)).toBe(1)
  })

  it('stays bounded under churn', () => {
    const lru = new TtlLru<number>(1000)
    for (let i = 0; i < 50_000; i++) {
      lru.set(`k${i}`, i, 1e12)
      if (i % 3 === 0) lru.get(`k${i >> 1}`, 0)
    }
    expect(lru.size).toBe(1000)
    expect(lru.get('k49999', 0)).toBe(49999)
  })
})

describe('TokenCache', () => {
  const tokenFor = (applicationId: string, userId = 'u1'): VerifiedToken => ({
    kind: 'user',
    userId,
    subject: userId,
    clientId: `client-${applicationId}`,
    applicationId,
    username: null,
    scopes: ['read'],
    issuedAt: 0,
    expiresAt: null,
    jkt: null,
    audience: null,
  })

  /** A cache over an in-memory table of valid tokens, counting lookups. */
  function setup(options: { maxEntries?: number; ttlMs?: number } = {}) {
    let now = 0
    const valid = new Map<string, VerifiedToken>()
    const lookups: string[] = []
    let release: (() => void) | undefined
    let hold = false
    const cache = new TokenCache({
      maxEntries: options.maxEntries ?? 100,
      ttlMs: options.ttlMs ?? 60_000,
      negativeTtlMs: 5_000,
      now: () => now,
      wrap: (token) => ({ token }),
      lookup: async (_token, d) => {
        lookups.push(d)
        if (hold) await new Promise<void>((resolve) => (release = resolve))
        return valid.get(d)
      },
    })
    const issue = (t: VerifiedToken) => {
      const token = generateAccessToken()
      valid.set(digest(token), t)
      return token
    }
    return {
      cache,
      valid,
      lookups,
      issue,
      advance: (ms: number) => {
        now += ms
      },
      holdLookups: () => {
        hold = true
      },
      releaseLookup: () => {
        hold = false
        release?.()
      },
    }
  }

  it('looks a token up once and then answers from memory', async () => {
    const s = setup()
    const token = s.issue(tokenFor('app1'))
    expect(s.cache.peek(token)).toBeUndefined()
    expect(await s.cache.check(token)).toMatchObject({ token: { applicationId: 'app1' } })
    expect(s.cache.check(token)).toMatchObject({ token: { applicationId: 'app1' } }) // synchronously
    expect(s.lookups).toHaveLength(1)
  })

  it('never looks up what is not shaped like a token', async () => {
    const s = setup()
    const token = generateAccessToken()
    for (const bad of ['', 'garbage', `${token.slice(0, -1)}!`, `${token}x`, 'gat_'.padEnd(10_000, 'a')]) {
      expect(s.cache.peek(bad)).toBeNull()
      expect(await s.cache.check(bad)).toBeNull()
    }
    expect(s.lookups).toHaveLength(0)
  })

  it('coalesces concurrent lookups of one token', async () => {
    const s = setup()
    const token = s.issue(tokenFor('app1'))
    s.holdLookups()
    const answers = Promise.all([s.cache.check(token), s.cache.check(token), s.cache.check(token)])
    await Promise.resolve()
    s.releaseLookup()
    expect((await answers).every((a) => a !== null)).toBe(true)
    expect(s.lookups).toHaveLength(1)
  })

  it('caches unknown tokens for the negative TTL only', async () => {
    const s = setup()
    const unknown = generateAccessToken()
    expect(await s.cache.check(unknown)).toBeNull()
    expect(s.cache.peek(unknown)).toBeNull()
    s.advance(5_000)
    expect(s.cache.peek(unknown)).toBeUndefined()
  })

  it('keeps unknown tokens apart, so a flood of them cannot evict valid ones', async () => {
    const s = setup({ maxEntries: 10 })
    const good = s.issue(tokenFor('app1'))
    await s.cache.check(good)
    for (let i = 0; i < 2000; i++) await s.cache.check(generateAccessToken())
    expect(s.cache.peek(good)).not.toBeNull()
    expect(s.cache.peek(good)).toBeDefined()
  })

  it('drops by digest, by application, and by user and application', async () => {
    const s = setup()
    const t1 = s.issue(tokenFor('app1', 'u1'))
    const t2 = s.issue(tokenFor('app1', 'u2'))
    const t3 = s.issue(tokenFor('app2', 'u1'))
    const t4 = s.issue(tokenFor('app3', 'u1'))
    for (const t of [t1, t2, t3, t4]) await s.cache.check(t)

    s.cache.apply({ kind: 'tokens', digests: [digest(t4)] }, 'notify')
    expect(s.cache.peek(t4)).toBeUndefined()
    s.cache.apply({ kind: 'user-application', userId: 'u1', applicationId: 'app1' }, 'notify')
    expect(s.cache.peek(t1)).toBeUndefined()
    expect(s.cache.peek(t2)).toBeDefined()
    s.cache.apply({ kind: 'application-deleted', applicationId: 'app1' }, 'notify')
    expect(s.cache.peek(t2)).toBeUndefined()
    expect(s.cache.peek(t3)).toBeDefined()
    s.cache.apply({ kind: 'client-credentials', clientId: 'client-app2' }, 'notify')
    expect(s.cache.peek(t3)).toBeDefined()
    expect(s.cache.size).toBe(1)
  })

  it('does not cache an answer that a revocation overtook', async () => {
    const s = setup()
    const token = s.issue(tokenFor('app1'))
    s.holdLookups()
    const answer = s.cache.check(token)
    await Promise.resolve()
    // The revocation commits and is announced while the lookup still reads the old row.
    s.cache.apply({ kind: 'tokens', digests: [digest(token)] }, 'notify')
    s.releaseLookup()
    expect(await answer).not.toBeNull()
    expect(s.cache.peek(token)).toBeUndefined()
  })

  it('keeps a locally announced revocation out of the cache until its NOTIFY confirms it', async () => {
    const s = setup()
    const token = s.issue(tokenFor('app1'))
    // Announced by this process before its transaction committed: a lookup may still find the row live.
    s.cache.apply({ kind: 'tokens', digests: [digest(token)] }, 'local')
    expect(await s.cache.check(token)).not.toBeNull()
    expect(s.cache.peek(token)).toBeUndefined()
    s.cache.apply({ kind: 'application-deleted', applicationId: 'app1' }, 'local')
    s.cache.apply({ kind: 'tokens', digests: [digest(token)] }, 'notify')
    // The application-wide notice is still unconfirmed.
    await s.cache.check(token)
    expect(s.cache.peek(token)).toBeUndefined()
    s.cache.apply({ kind: 'application-deleted', applicationId: 'app1' }, 'notify')
    await s.cache.check(token)
    expect(s.cache.peek(token)).toBeDefined()
  })

  it('gives up waiting for a confirmation after a while (the transaction rolled back)', async () => {
    const s = setup()
    const token = s.issue(tokenFor('app1'))
    s.cache.apply({ kind: 'tokens', digests: [digest(token)] }, 'local')
    s.advance(10_000)
    await s.cache.check(token)
    expect(s.cache.peek(token)).toBeDefined()
  })

  it('forgets everything on clear, including lookups in flight', async () => {
    const s = setup()
    const cached = s.issue(tokenFor('app1'))
    const pending = s.issue(tokenFor('app2'))
    await s.cache.check(cached)
    s.holdLookups()
    const answer = s.cache.check(pending)
    await Promise.resolve()
    s.cache.clear()
    s.releaseLookup()
    await answer
    expect(s.cache.peek(cached)).toBeUndefined()
    expect(s.cache.peek(pending)).toBeUndefined()
  })

  it('refuses a TTL beyond 5 minutes', () => {
    expect(() => setup({ ttlMs: 300_001 })).toThrow(RangeError)
  })
})
