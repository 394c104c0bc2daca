import { afterAll, beforeAll, expect, it } from 'vitest'
import { buildTestApp, type TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'

let t: TestContext
beforeAll(async () => { t = await buildTestApp() })
afterAll(async () => { await t.close() })

it('serves health and readiness', async () => {
  expect((await t.app.inject('/healthz')).json()).toEqual({ status: 'ok' })
  expect((await t.app.inject('/readyz')).statusCode).toBe(200)
})

it('signs up and logs in', async () => {
  const s = await new BrowserSession(t.app).signUpAndLogIn('smoke@example.com')
  const res = await s.get('/')
  expect(res.statusCode).toBe(303)
  expect(res.headers.location).toBe('/applications')
})

it('exposes Prometheus metrics by route pattern, never by raw URL', async () => {
  await t.app.inject('/login?next=%2Fapplications&password=hunter2')
  const res = await t.app.inject('/metrics')
  expect(res.statusCode).toBe(200)
  expect(res.body).toMatch(/gatehouse_http_requests_total\{method="GET",route="\/login",status="200"\} \d+/)
  expect(res.body).not.toContain('hunter2')
  expect(res.body).toContain('process_cpu_user_seconds_total')
})
