import { afterAll, describe, expect, it } from 'vitest'
import { growthCases } from './cases.js'
import { type MeasureContext, warmupRequests } from './measure.js'
import { FixedPool, removePoolFiles } from './pools.js'
import type { SeedInfo } from './seed.js'

const seed = { clientId: 'id', clientSecret: 'secret', redirectUri: 'https://client.example/cb' } as SeedInfo
const tokens = Array.from({ length: 10_000 }, (_, i) => `token-${i}`)

const context = (warmupS: number) =>
  ({
    warmupS,
    warmupRequestsPerConnection: 20,
    warmupRequestsMin: 2000,
    growth: new FixedPool('growth', tokens),
  }) as unknown as MeasureContext

afterAll(removePoolFiles)

describe('warmupRequests', () => {
  const [introspectMiss, exchange] = growthCases(seed, 50_000)

  it('passes once over the whole pool for a growth row, so the measured rounds start warm', () => {
    expect(introspectMiss!.warmupOverPool).toBe(true)
    expect(warmupRequests(context(0), introspectMiss!, 16)).toBe(10_000)
    expect(warmupRequests(context(0), introspectMiss!, 1000)).toBe(20_000)
  })

  it('keeps the usual count for a row over fresh items', () => {
    expect(warmupRequests(context(0), exchange!, 16)).toBe(2000)
    expect(warmupRequests(context(0), exchange!, 64)).toBe(2000)
    expect(warmupRequests(context(0), exchange!, 200)).toBe(4000)
  })

  it('sends no counted warm-up when the warm-up is timed', () => {
    expect(warmupRequests(context(5), introspectMiss!, 16)).toBe(0)
  })
})
