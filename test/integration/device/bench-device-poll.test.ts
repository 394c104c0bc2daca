import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { gatehouseCases } from '../../../bench/cases.js'
import { type SeedInfo, insertDeviceCodes } from '../../../bench/seed.js'
import { sha256Hex } from '../../../src/lib/crypto.js'
import type { TestContext } from '../../helpers/app.js'
import { type TestClient, buildOAuthTestApp, createClient, expectOAuthError } from '../oauth/helpers.js'

/*
 * The benchmark's device-poll row (docs/performance.md "Running it"): the pending device codes it
 * seeds in bulk are rows the real token endpoint polls as pending, and its request, sent once per
 * code, is answered authorization_pending (RFC 8628 §3.5), so the row measures that answer.
 */

let t: TestContext
let app: TestClient
let seed: SeedInfo

beforeAll(async () => {
  t = await buildOAuthTestApp()
  app = await createClient(t.db, { name: 'Bench device' })
  await t.db.updateTable('applications').set({ allow_device_flow: true }).where('id', '=', app.id).execute()
  const device = { clientId: app.clientId, clientSecret: app.clientSecret, applicationId: app.id }
  // The other rows' applications are not seeded here: only the device-poll row is sent.
  const unused = { clientId: 'unused', clientSecret: 'unused', applicationId: 'unused' }
  seed = { ...unused, openid: { RS256: unused, ES256: unused, EdDSA: unused }, machine: unused, device, refresh: unused } as SeedInfo
})
afterAll(async () => {
  await t.close()
})

const row = () => gatehouseCases(seed, 1000).find((c) => c.id === 'device-poll')!

function poll(code: string) {
  const { method, path, headers, body } = row()
  return t.app.inject({ method, url: path, headers, payload: body!.split('{item}').join(code) })
}

describe("the bench's device-poll row", () => {
  it('stores digests only, and each seeded code, polled once, answers authorization_pending', async () => {
    const codes = await insertDeviceCodes(t.db, seed, 3, t.clock())
    const stored = await t.db.selectFrom('device_authorizations').select('device_code_hash').where('application_id', '=', app.id).execute()
    expect(stored.map((r) => r.device_code_hash).sort()).toEqual(codes.map(sha256Hex).sort())
    for (const code of codes) {
      const res = await poll(code)
      expectOAuthError(res, 'authorization_pending')
      // What the load generator checks of every answer (bench/load-worker.ts).
      expect(row().expect).toContain(res.statusCode)
      expect(res.body).toContain(row().check!.bodyIncludes)
    }
  })

  it('would answer slow_down to a code polled again within its interval: why the row sends each code once', async () => {
    const [code] = await insertDeviceCodes(t.db, seed, 1, t.clock())
    expectOAuthError(await poll(code!), 'authorization_pending')
    const again = await poll(code!)
    expectOAuthError(again, 'slow_down')
    expect(again.body).not.toContain(row().check!.bodyIncludes)
  })

  it('costs two statements and no transaction: the client read, then the poll read and recorded in one (src/repositories/device-authorizations.ts)', async () => {
    const [first, second] = await insertDeviceCodes(t.db, seed, 2, t.clock())
    expectOAuthError(await poll(first!), 'authorization_pending')
    const before = { queries: t.queries.count, transactions: t.queries.transactions }
    expectOAuthError(await poll(second!), 'authorization_pending')
    expect(t.queries.count - before.queries).toBe(2)
    expect(t.queries.transactions - before.transactions).toBe(0)
    const polled = await t.db
      .selectFrom('device_authorizations')
      .select(['last_polled_at', 'interval_seconds'])
      .where('device_code_hash', '=', sha256Hex(second!))
      .executeTakeFirstOrThrow()
    expect(polled.last_polled_at).toEqual(t.clock())
  })
})
