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
