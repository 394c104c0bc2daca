import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../helpers/app.js'

/*
 * GET /metrics is not for everyone (docs/operating/backups-and-upgrades.md "Operations"): without METRICS_TOKEN only a loopback
 * client is answered; with it, only a scraper sending it as a bearer token.
 */

describe('without METRICS_TOKEN', () => {
  let t: TestContext
  beforeAll(async () => {
    t = await buildTestApp()
  })
  afterAll(async () => {
    await t.close()
  })

  it('answers loopback clients and refuses every other address with 403', async () => {
    for (const remoteAddress of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) {
      const res = await t.app.inject({ url: '/metrics', remoteAddress })
      expect(res.statusCode, remoteAddress).toBe(200)
      expect(res.body).toMatch(/^gatehouse_database_up 1$/m)
    }
    for (const remoteAddress of ['192.0.2.10', '2001:db8::1', '::ffff:192.0.2.10', '10.0.0.1']) {
      const res = await t.app.inject({ url: '/metrics', remoteAddress })
      expect(res.statusCode, remoteAddress).toBe(403)
      expect(res.body).toContain('METRICS_TOKEN')
      expect(res.body).not.toContain('gatehouse_')
    }
  })
})

describe('with METRICS_TOKEN', () => {
  const token = 'm'.repeat(20) + '0123456789abcdef'
  let t: TestContext
  beforeAll(async () => {
    t = await buildTestApp({ METRICS_TOKEN: token })
  })
  afterAll(async () => {
    await t.close()
  })

  it('answers the bearer of the token from anywhere, and nobody else, not even loopback', async () => {
    const ok = await t.app.inject({ url: '/metrics', remoteAddress: '192.0.2.10', headers: { authorization: `Bearer ${token}` } })
    expect(ok.statusCode).toBe(200)
    expect(ok.body).toMatch(/^gatehouse_database_up 1$/m)
    for (const authorization of [undefined, `Bearer ${token}x`, `Bearer ${token.slice(1)}`, `Basic ${token}`, token, 'Bearer ']) {
      const res = await t.app.inject({ url: '/metrics', headers: authorization === undefined ? {} : { authorization } })
      expect(res.statusCode, String(authorization)).toBe(403)
      expect(res.body).not.toContain('gatehouse_')
    }
  })
})
