import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import type { ServiceParts, Services } from '../../src/services.js'
import { type TestContext, buildTestApp } from '../helpers/app.js'

/*
 * The edge reads the process's state through `services.probes` alone (docs/architecture.md
 * "Composition root"): /readyz, /metrics and the error handlers need none of the parts behind the
 * face. The app here is built from the face with those parts taken away, over a real database.
 */

/** Every member of `ServiceParts`: what createServices returns besides the face. */
const PARTS = ['database', 'bus', 'janitor', 'tokenQuota', 'audit', 'mailer', 'caches'] as const satisfies readonly (keyof ServiceParts)[]

/** The services as the edge's type describes them, and nothing more. */
function faceOnly(t: TestContext): Services {
  const face: Record<string, unknown> = { ...t.deps }
  for (const part of PARTS) delete face[part]
  return face as unknown as Services
}

describe('an app given only the services face', () => {
  let t: TestContext
  let app: FastifyInstance
  beforeAll(async () => {
    t = await buildTestApp()
    app = await buildApp(faceOnly(t))
    await app.ready()
  })
  afterAll(async () => {
    await app?.close()
    await t.close()
  })

  it('answers /healthz and /readyz from the probes', async () => {
    expect((await app.inject({ url: '/healthz' })).json()).toEqual({ status: 'ok' })
    const ready = await app.inject({ url: '/readyz' })
    expect(ready.statusCode).toBe(200)
    expect(ready.headers['cache-control']).toBe('no-store')
    expect(ready.json()).toEqual({ status: 'ok', database: 'ok' })
  })

  it("exports the services' gauges and totals, read at each scrape", async () => {
    const scrape = async () => (await app.inject({ url: '/metrics', remoteAddress: '127.0.0.1' })).body
    const before = await scrape()
    for (const line of [
      /^gatehouse_database_up 1$/m,
      /^gatehouse_database_refused_requests_total 0$/m,
      /^gatehouse_janitor_failed_runs_total 0$/m,
      /^gatehouse_audit_events_unrecorded_total 0$/m,
      /^gatehouse_tokens_evicted_total 0$/m,
      /^gatehouse_token_quota_failures_total 0$/m,
    ])
      expect(before).toMatch(line)

    t.deps.database.availability.lost(new Error('the probe test says the database went away'))
    expect(await scrape()).toMatch(/^gatehouse_database_up 0$/m)
    t.deps.database.availability.reachable()
    expect(await scrape()).toMatch(/^gatehouse_database_up 1$/m)
  })

  it('answers OAuth and page errors through their handlers', async () => {
    const token = await app.inject({ method: 'POST', url: '/oauth/token', payload: '{', headers: { 'content-type': 'application/json' } })
    expect(token.statusCode).toBe(400)
    expect(token.json()).toMatchObject({ error: 'invalid_request' })
    const page = await app.inject({ url: '/no-such-page' })
    expect(page.statusCode).toBe(404)
    expect(page.headers['content-type']).toMatch(/^text\/html/)
  })
})
