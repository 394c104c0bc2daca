import { describe, expect, it } from 'vitest'
import { SESSION_CACHE_TTL_MS, SessionCache } from '../../src/accounts/sessions/session-cache.js'
import type { SessionUser } from '../../src/accounts/sessions/sessions.js'
import { manualClock } from '../../src/lib/clock.js'

const user = (key: string): SessionUser => ({
  id: `user-${key}`,
  email: `${key}@example.com`,
  is_operator: false,
  emailVerified: true,
  secondFactor: false,
  amr: ['pwd'],
  authenticatedAt: new Date(0),
  confirmedAt: new Date(0),
  sid: `sid-${key}`,
  sessionKey: key,
})

describe('SessionCache (src/accounts/sessions/session-cache.ts)', () => {
  it('hands out a copy marked cached, never the fresh read it was given, until SESSION_CACHE_TTL_MS passes', () => {
    const clock = manualClock()
    const cache = new SessionCache(clock, 10)
    const fresh = user('a')
    cache.remember('a', fresh)
    expect(fresh.cached).toBeUndefined()
    expect(cache.get('a')).toEqual({ ...fresh, cached: true })
    clock.advance(SESSION_CACHE_TTL_MS - 1)
    expect(cache.get('a')?.cached).toBe(true)
    clock.advance(1)
    expect(cache.get('a')).toBeUndefined()
  })

  it('keeps at most SESSION_CACHE_MAX_ENTRIES, dropping the least recently used', () => {
    const cache = new SessionCache(manualClock(), 2)
    cache.remember('a', user('a'))
    cache.remember('b', user('b'))
    cache.get('a')
    cache.remember('c', user('c'))
    expect(['a', 'b', 'c'].map((k) => cache.get(k) !== undefined)).toEqual([true, false, true])
  })

  it('forgets a session read as gone, or on log-out; 0 entries keeps nothing', () => {
    const cache = new SessionCache(manualClock(), 10)
    cache.remember('a', user('a'))
    cache.remember('a', undefined)
    expect(cache.get('a')).toBeUndefined()
    cache.remember('b', user('b'))
    cache.forget('b')
    expect(cache.get('b')).toBeUndefined()
    const off = new SessionCache(manualClock(), 0)
    off.remember('a', user('a'))
    expect(off.get('a')).toBeUndefined()
  })
})
