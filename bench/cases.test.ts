import { describe, expect, it } from 'vitest'
import { gatehouseCases, pgbouncerCases } from './cases.js'
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
