import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { gatehouseCases } from '../../../bench/cases.js'
import { type SeedInfo, insertRefreshTokens } from '../../../bench/seed.js'
import { sha256Hex } from '../../../src/lib/crypto.js'
import type { TestContext } from '../../helpers/app.js'
import { type TestClient, buildOAuthTestApp, createClient, expectOAuthError } from './helpers.js'

/*
 * The benchmark's refresh row (docs/performance.md "Running it"): the refresh tokens it seeds in
 * bulk, each the first of a family of its own, are rows the real token endpoint rotates (RFC 6749
 * §6, docs/expiring-tokens.md), and its request, sent once per token, is answered 200 with a new
 * refresh token, so the row measures the rotation and never reuse.
 */

let t: TestContext
let app: TestClient
let seed: SeedInfo

beforeAll(async () => {
  t = await buildOAuthTestApp()
  app = await createClient(t.db, { name: 'Bench refresh', scopes: ['read'] })
  await t.db
    .updateTable('applications')
    .set({ access_token_ttl_seconds: 3600, refresh_token_ttl_seconds: 2_592_000 })
    .where('id', '=', app.id)
    .execute()
  const refresh = { clientId: app.clientId, clientSecret: app.clientSecret, applicationId: app.id }
  // The other rows' applications are not seeded here: only the refresh row is sent.
  const unused = { clientId: 'unused', clientSecret: 'unused', applicationId: 'unused' }
  seed = {
    ...unused,
    passwordHash: 'not-a-hash',
    openid: { RS256: unused, ES256: unused, EdDSA: unused },
    machine: unused,
    device: unused,
    refresh,
  } as SeedInfo
})
afterAll(async () => {
  await t.close()
})

const row = () => gatehouseCases(seed, 1000).find((c) => c.id === 'refresh')!

function send(token: string) {
  const { method, path, headers, body } = row()
  return t.app.inject({ method, url: path, headers, payload: body!.split('{item}').join(token) })
}

describe("the bench's refresh row", () => {
  it('stores digests only, one family and one user per token, and each seeded token, sent once, answers 200 with a new refresh token', async () => {
    const tokens = await insertRefreshTokens(t.db, seed, 3, t.clock())
    const stored = await t.db
      .selectFrom('refresh_tokens as r')
      .innerJoin('refresh_token_families as f', 'f.id', 'r.family_id')
      .select(['r.token_hash', 'r.family_id', 'f.user_id', 'f.scopes', 'f.access_token_ttl_seconds'])
      .where('f.application_id', '=', app.id)
      .execute()
    expect(stored.map((r) => r.token_hash).sort()).toEqual(tokens.map(sha256Hex).sort())
    expect(new Set(stored.map((r) => r.family_id)).size).toBe(3)
    expect(new Set(stored.map((r) => r.user_id)).size).toBe(3)
    for (const token of tokens) {
      const res = await send(token)
      expect(res.statusCode).toBe(200)
      const answer = res.json<{ refresh_token: string; expires_in: number; scope: string }>()
      expect(answer).toMatchObject({ expires_in: 3600, scope: 'read' })
      expect(answer.refresh_token).not.toBe(token)
      // What the load generator checks of every answer (bench/load-worker.ts).
      expect(row().expect).toContain(res.statusCode)
      expect(res.body).toContain(row().check!.bodyIncludes)
      // Rotated: the successor is stored as its digest, and the presented token retired.
      const successor = await t.db
        .selectFrom('refresh_tokens')
        .select('retired_at')
        .where('token_hash', '=', sha256Hex(answer.refresh_token))
        .executeTakeFirst()
      expect(successor).toEqual({ retired_at: null })
    }
  })

  it('would end the family on a token presented again after the grace window: why the row sends each token once', async () => {
    const [token] = await insertRefreshTokens(t.db, seed, 1, t.clock())
    expect((await send(token!)).statusCode).toBe(200)
    t.clock.advance(3600_000)
    const again = await send(token!)
    expectOAuthError(again, 'invalid_grant')
    expect(again.body).not.toContain(row().check!.bodyIncludes)
  })
})
