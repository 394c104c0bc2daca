import { describe, expect, it } from 'vitest'
import { REMEMBERED_BLOCK, REMEMBERED_REPEATS, gatehouseCases, mainPhaseCases, pgbouncerCases, rememberedAgain } from './cases.js'
import type { BenchApplication, SeedInfo } from './seed.js'
import { PGBOUNCER_PATHS } from './stats.js'

const app = (name: string): BenchApplication => ({ clientId: `${name}-id`, clientSecret: `${name}-secret`, applicationId: `${name}-app` })

const seed: SeedInfo = {
  ...app('bench'),
  passwordHash: 'hash',
  redirectUri: 'https://client.bench.example/callback',
  consentedUserId: 'consented',
  newUserId: 'new',
  newCookie: 'cookie',
  openid: { RS256: app('rs256'), ES256: app('es256'), EdDSA: app('eddsa') },
}

describe('pgbouncerCases (issue 25)', () => {
  it('pairs each path, one process direct then two through PgBouncer, with the request of the main row', () => {
    const cases = pgbouncerCases(seed, 1000)
    expect(cases.map((c) => [c.id, c.server])).toEqual(
      PGBOUNCER_PATHS.flatMap((path) => [
        [`direct-${path}`, 'gatehouse'],
        [`pgbouncer-${path}`, 'pgbouncer'],
      ]),
    )
    const main = new Map(gatehouseCases(seed, 1000).map((c) => [c.id, c]))
    for (const c of cases) {
      const { id: _id, title: _title, server: _server, ...request } = c
      const { id: _mainId, title: _mainTitle, server: _mainServer, ...mainRequest } = main.get(c.id.replace(/^(direct|pgbouncer)-/, ''))!
      expect(request).toEqual(mainRequest)
    }
  })
})

describe('mainPhaseCases (issue 25)', () => {
  it("runs M and K right after A, M sending K's request to A's route, and every row once", () => {
    const cases = mainPhaseCases(seed, 1000)
    expect(cases.slice(0, 3).map((c) => c.id)).toEqual(['baseline-a', 'baseline-m', 'baseline-k'])
    const ids = cases.map((c) => c.id)
    expect(new Set(ids).size).toBe(ids.length)
    const [a, m, k] = cases
    expect(m!.path).toBe(a!.path)
    const { id: _m, title: _mt, path: _mp, ...mRequest } = m!
    const { id: _k, title: _kt, path: _kp, ...kRequest } = k!
    expect(mRequest).toEqual(kRequest)
    expect(ids).toEqual(expect.arrayContaining(gatehouseCases(seed, 1000).map((c) => c.id)))
  })
})

describe('rememberedAgain (issue 25)', () => {
  it('sends each block of sessions REMEMBERED_REPEATS times, a session coming back after its block, every session once per pass', () => {
    const sessions = Array.from({ length: REMEMBERED_BLOCK * 2 + 7 }, (_, i) => `s${i}`)
    const order = rememberedAgain(sessions)
    expect(order).toHaveLength(sessions.length * REMEMBERED_REPEATS)
    const seen = new Map<string, number[]>()
    order.forEach((s, i) => seen.set(s, [...(seen.get(s) ?? []), i]))
    expect(seen.size).toBe(sessions.length)
    for (const [s, at] of seen) {
      expect(at).toHaveLength(REMEMBERED_REPEATS)
      const gap = Number(s.slice(1)) < REMEMBERED_BLOCK * 2 ? REMEMBERED_BLOCK : 7
      expect(at.slice(1).map((i, k) => i - at[k]!)).toEqual(Array(REMEMBERED_REPEATS - 1).fill(gap))
    }
  })
})
