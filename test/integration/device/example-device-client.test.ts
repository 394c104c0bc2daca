import { createVerifier } from '@gatehouse/verifier'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { runDeviceClient } from '../../../examples/device-client.js'
import { buildResourceApi } from '../../../examples/resource-api.js'
import type { TestContext } from '../../helpers/app.js'
import { createApplication } from '../../helpers/factories.js'
import { listenOnLoopback } from '../../helpers/loopback.js'
import { type TestClient, buildOAuthTestApp, createClient, loggedInUser } from '../oauth/helpers.js'

/*
 * The walk-through of docs/oauth-endpoints.md "Device flow": examples/device-client.ts
 * (`npm run example:device`) against a listening Gatehouse and the example resource API
 * (examples/resource-api.ts) checking tokens by introspection. The user answers on /device when
 * the example shows the code, as a person reading the terminal would.
 */

let t: TestContext
let issuer: string
let device: TestClient
let api: FastifyInstance
let apiUrl: string

beforeAll(async () => {
  const listening = await listenOnLoopback((env) => buildOAuthTestApp({ ...env, DEVICE_CODE_INTERVAL_SECONDS: '1' }))
  t = listening.t
  issuer = listening.baseUrl
  device = await createClient(t.db, { name: 'Terminal Tool' })
  await t.db.updateTable('applications').set({ allow_device_flow: true }).where('id', '=', device.id).execute()
  const rs = await createApplication(t.db, { name: 'Example resource API', resourceServer: true })
  const verifier = createVerifier({
    mode: 'introspection',
    introspectionUrl: `${issuer}/oauth/introspect`,
    clientId: rs.clientId,
    clientSecret: rs.clientSecret,
  })
  api = await buildResourceApi(verifier)
  api.addHook('onClose', () => verifier.close())
  apiUrl = await api.listen({ port: 0, host: '127.0.0.1' })
})
afterAll(async () => {
  await api?.close()
  await t?.close()
})

it('prints the code and the page, waits for the user, then calls GET /me as that user', async () => {
  const browser = await loggedInUser(t.app)
  const shown: string[] = []
  const me = await runDeviceClient({
    issuer,
    clientId: device.clientId,
    clientSecret: device.clientSecret,
    scope: 'read',
    apiUrl,
    show: async (message, started) => {
      shown.push(message)
      await browser.get(`/device?user_code=${started.user_code}`)
      const consent = await browser.post('/device', { user_code: started.user_code })
      const requestId = /name="request_id" value="([^"]+)"/.exec(consent.body)![1]!
      await browser.post('/device/answer', { request_id: requestId, decision: 'approve' })
    },
  })
  expect(shown[0]).toMatch(new RegExp(`open ${issuer}/device on your phone or computer and type the code [A-Z]{4}-[A-Z]{4}`))
  const user = await t.db.selectFrom('users').select('id').where('email', '=', browser.email).executeTakeFirstOrThrow()
  expect(me).toMatchObject({ user_id: user.id, application: device.clientId, scopes: ['read'] })
})

it('fails plainly when the user denies', async () => {
  const browser = await loggedInUser(t.app)
  const failure = await runDeviceClient({
    issuer,
    clientId: device.clientId,
    clientSecret: device.clientSecret,
    scope: 'read',
    apiUrl,
    show: async (_message, started) => {
      await browser.get('/device')
      const consent = await browser.post('/device', { user_code: started.user_code })
      const requestId = /name="request_id" value="([^"]+)"/.exec(consent.body)![1]!
      await browser.post('/device/answer', { request_id: requestId, decision: 'deny' })
    },
  }).catch((e: unknown) => e)
  expect((failure as { error?: string }).error).toBe('access_denied')
})
