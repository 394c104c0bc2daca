import { describe, expect, it } from 'vitest'
import { SESSION_COOKIE as SERVER_SESSION_COOKIE } from '../src/http/cookies.js'
import {
  BASELINE_CASES,
  type BenchCase,
  REMEMBERED_BLOCK,
  REMEMBERED_REPEATS,
  SESSION_COOKIE,
  gatehouseCases,
  growthGroups,
  mainPhaseCases,
  mainPhaseGroups,
  rememberedAgain,
  selectGroups,
  statementCases,
} from './cases.js'
import type { BenchApplication, SeedInfo } from './seed.js'
import { COMPARISONS, RATIO_TARGETS } from './stats.js'

const app = (name: string): BenchApplication => ({ clientId: `${name}-id`, clientSecret: `${name}-secret`, applicationId: `${name}-app` })

const seed: SeedInfo = {
  ...app('bench'),
  passwordHash: 'hash',
  redirectUri: 'https://client.bench.example/callback',
  consentedUserId: 'consented',
  newUserId: 'new',
  newCookie: 'cookie',
  openid: { RS256: app('rs256'), ES256: app('es256'), EdDSA: app('eddsa') },
  machine: app('machine'),
  device: app('device'),
  refresh: app('refresh'),
}

describe('the session cookie the rows send', () => {
  it('is the name the server sets over http (docs/applications.md "Console")', () => {
    expect(SESSION_COOKIE).toBe(SERVER_SESSION_COOKIE)
  })
})

describe('growthGroups', () => {
  it('runs each growth row beside its baseline and its own work: B and R beside the introspection miss, C and E beside the exchange', () => {
    const groups = growthGroups(seed, 50_000)
    expect(groups.map((g) => g.map((c) => c.id))).toEqual([
      ['baseline-b', 'baseline-r', 'introspect-miss-growth'],
      ['baseline-c', 'baseline-e', 'code-exchange-growth'],
    ])
    const [[, r, introspection], [, e, exchange]] = groups as [BenchCase[], BenchCase[]]
    // R looks up the growth row's tokens as the growth row does, warmed over the same pool.
    expect(r).toMatchObject({ path: '/r', pool: introspection!.pool, warmupOverPool: true, body: introspection!.body })
    // E's tokens leave the table after each run, as the growth row's do, so neither phase's table grows.
    expect(e).toMatchObject({ afterRun: 'remove-exchanged', pool: exchange!.pool })
    expect(e!.afterRun).toBe(exchange!.afterRun)
  })

  it('runs R in the growth phases only', () => {
    expect(mainPhaseCases(seed, 1000).map((c) => c.id)).not.toContain('baseline-r')
  })
})

describe('mainPhaseGroups', () => {
  const groups = mainPhaseGroups(seed, 1000)
  const ids = (g: readonly { id: string }[]) => g.map((c) => c.id)

  it('runs every row of the main phase, each named by a group', () => {
    const every = [...BASELINE_CASES, ...statementCases(seed, 1000), ...gatehouseCases(seed, 1000)].map((c) => c.id)
    expect(new Set(groups.flatMap(ids))).toEqual(new Set(every))
    // A leftover group would start with a row that is not one of the four baselines A–D.
    for (const g of groups) expect(['baseline-a', 'baseline-b', 'baseline-c', 'baseline-d']).toContain(g[0]!.id)
    expect(ids(mainPhaseCases(seed, 1000)).sort()).toEqual([...every].sort())
  })

  it('puts each target row and each comparison of the main phase in a group with the rows it is divided by', () => {
    const main = new Set(groups.flatMap(ids))
    const pairs = [
      ...RATIO_TARGETS.map((t) => [t.caseId, t.baselineId] as const),
      ...COMPARISONS.flatMap((c) => c.against.map((other) => [c.caseId, other] as const)),
    ].filter(([row, other]) => main.has(row) && main.has(other))
    expect(pairs.length).toBeGreaterThan(20)
    for (const [row, other] of pairs) {
      expect(
        groups.some((g) => ids(g).includes(row) && ids(g).includes(other)),
        `${row} beside ${other}`,
      ).toBe(true)
    }
  })

  it("runs M and K beside A, M sending K's request to A's route", () => {
    const group = groups.find((g) => ids(g).includes('baseline-k'))!
    expect(ids(group)).toEqual(['baseline-a', 'baseline-m', 'baseline-k'])
    const [a, m, k] = group
    expect(m!.path).toBe(a!.path)
    const { id: _m, title: _mt, path: _mp, ...mRequest } = m!
    const { id: _k, title: _kt, path: _kp, ...kRequest } = k!
    expect(mRequest).toEqual(kRequest)
  })

  it.each([
    ['baseline-q', 'baseline-i', 'introspect-cached'],
    ['baseline-l', 'baseline-j', 'token-info-cached'],
  ])("sends %s %s's request, beside A, %s and the Gatehouse row", (answer, work, row) => {
    const byId = new Map(groups.flat().map((c) => [c.id, c]))
    const { id: _a, title: _at, path: answerPath, check: _ac, ...answerRequest } = byId.get(answer)!
    const { id: _w, title: _wt, path: workPath, check: _wc, ...workRequest } = byId.get(work)!
    expect(answerRequest).toEqual(workRequest)
    expect(answerPath).not.toBe(workPath)
    expect(byId.get(answer)!.check?.header).toEqual({ name: 'x-content-type-options', includes: 'nosniff' })
    expect(groups.find((g) => g.some((c) => c.id === answer))!.map((c) => c.id)).toEqual([
      'baseline-a',
      work,
      answer,
      row,
      ...(row === 'token-info-cached' ? ['userinfo-cached'] : []),
    ])
  })

  it.each([
    ['baseline-n', 'baseline-i', 'introspect-miss'],
    ['baseline-o', 'baseline-j', 'token-info-miss'],
  ])("sends %s %s's request with %s's fresh tokens, beside B", (own, cached, miss) => {
    const byId = new Map(groups.flat().map((c) => [c.id, c]))
    const { id: _o, title: _ot, pool: ownPool, ...ownRequest } = byId.get(own)!
    const { id: _c, title: _ct, pool: _cPool, ...cachedRequest } = byId.get(cached)!
    expect(ownRequest).toEqual(cachedRequest)
    expect(ownPool).toEqual(byId.get(miss)!.pool)
    expect(groups.find((g) => g.some((c) => c.id === own))!.map((c) => c.id)).toEqual(expect.arrayContaining(['baseline-b', miss]))
  })

  it("sends P G's request, beside D, G and revoke", () => {
    const byId = new Map(groups.flat().map((c) => [c.id, c]))
    const { id: _p, title: _pt, path: pPath, ...pRequest } = byId.get('baseline-p')!
    const { id: _g, title: _gt, path: _gPath, ...gRequest } = byId.get('baseline-g')!
    expect(pRequest).toEqual(gRequest)
    expect(pPath).toBe('/p')
    expect(groups.find((g) => g.some((c) => c.id === 'baseline-p'))!.map((c) => c.id)).toEqual([
      'baseline-d',
      'baseline-g',
      'baseline-p',
      'revoke',
    ])
  })
})

describe('device-poll', () => {
  const row = gatehouseCases(seed, 1000).find((c) => c.id === 'device-poll')!

  it("polls as a device does (RFC 8628 §3.4): the device code grant, the device application's credentials", () => {
    const body = new URLSearchParams(row.body!.replace('{item}', 'gdc_code'))
    expect(Object.fromEntries(body)).toEqual({
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      device_code: 'gdc_code',
      client_id: 'device-id',
      client_secret: 'device-secret',
    })
    expect(row).toMatchObject({ method: 'POST', path: '/oauth/token', server: 'gatehouse' })
  })

  it('sends each pending code once, so every answer must be authorization_pending and a slow_down fails the row (§3.5)', () => {
    expect(row.pool).toEqual({ kind: 'fresh-device-codes', minBatch: 1000 })
    expect(row.expect).toEqual([400])
    expect(row.check).toEqual({ bodyIncludes: '"error":"authorization_pending"' })
  })

  it('runs beside C, its ceiling, and is compared with it', () => {
    const group = mainPhaseGroups(seed, 1000).find((g) => g.some((c) => c.id === 'device-poll'))!
    expect(group.map((c) => c.id)).toEqual(['baseline-c', 'client-credentials', 'device-poll', 'refresh'])
    expect(COMPARISONS.find((c) => c.caseId === 'device-poll')).toMatchObject({ against: ['baseline-c'], costOver: 'baseline-c' })
  })
})

describe('refresh', () => {
  const row = gatehouseCases(seed, 1000).find((c) => c.id === 'refresh')!

  it("refreshes as a confidential client does (RFC 6749 §6): the refresh token grant, the refresh application's credentials", () => {
    const body = new URLSearchParams(row.body!.replace('{item}', 'grt_token'))
    expect(Object.fromEntries(body)).toEqual({
      grant_type: 'refresh_token',
      refresh_token: 'grt_token',
      client_id: 'refresh-id',
      client_secret: 'refresh-secret',
    })
    expect(row).toMatchObject({ method: 'POST', path: '/oauth/token', server: 'gatehouse' })
  })

  it('sends each refresh token once, so no request is reuse, and every answer must carry a new refresh token', () => {
    expect(row.pool).toEqual({ kind: 'fresh-refresh-tokens', minBatch: 1000 })
    expect(row.expect).toEqual([200])
    expect(row.check).toEqual({ bodyIncludes: '"refresh_token"' })
  })

  it("runs beside C, its ceiling, and is compared with it, PostgreSQL's share too", () => {
    const group = mainPhaseGroups(seed, 1000).find((g) => g.some((c) => c.id === 'refresh'))!
    expect(group.map((c) => c.id)).toEqual(['baseline-c', 'client-credentials', 'device-poll', 'refresh'])
    expect(COMPARISONS.find((c) => c.caseId === 'refresh')).toEqual({
      path: 'refresh token grant',
      caseId: 'refresh',
      against: ['baseline-c'],
      costOver: 'baseline-c',
      dbCostOver: true,
    })
  })
})

describe('selectGroups', () => {
  const groups = mainPhaseGroups(seed, 1000)
  const ids = (gs: readonly (readonly { id: string }[])[]) => gs.map((g) => g.map((c) => c.id))

  it('keeps every group when every row is chosen', () => {
    expect(ids(selectGroups(groups, new Set(groups.flat().map((c) => c.id))))).toEqual(ids(groups))
  })

  it('leaves out a group whose chosen rows all run in another kept group', () => {
    const chosen = new Set(['baseline-a', 'baseline-j', 'baseline-l', 'token-info-cached'])
    expect(ids(selectGroups(groups, chosen))).toEqual([['baseline-a', 'baseline-j', 'baseline-l', 'token-info-cached']])
  })

  it('still runs a chosen row that no group owns, once', () => {
    expect(ids(selectGroups(groups, new Set(['baseline-a'])))).toEqual([['baseline-a']])
    expect(ids(selectGroups(groups, new Set(['baseline-a', 'baseline-c'])))).toEqual([['baseline-a'], ['baseline-c']])
  })
})

describe('rememberedAgain', () => {
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
