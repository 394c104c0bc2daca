import { afterAll, beforeAll, expect, it } from 'vitest'
import { type Verifier, createVerifier } from '@gatehouse/verifier'
import { suspendApplication, suspendUser } from '../../../src/operator/moderation.js'
import { type TestContext, buildTestApp, listenOnFreePort } from '../../helpers/app.js'
import { type ApplicationFixture, createAccessToken, createApplication, createUser } from '../../helpers/factories.js'
import { until } from '../../helpers/oauth-load.js'
import { NOTICE_WAIT_MS } from '../../helpers/propagation.js'
import { operator } from './helpers.js'

/*
 * docs/operating/admin.md "Suspension": a suspension is seen by a resource API's verifier through the revocation
 * stream, long before its cached answers expire (the tests wait on that event; NOTICE_WAIT_MS in
 * test/helpers/propagation.ts is a safety net, not a latency bound, and the verifier's clock is
 * the test's manual one, so without the notice its entries would never expire). The verifier
 * runs as a resource API runs it: introspection mode against a listening Gatehouse, following
 * the revocation stream with a resource server's credentials, its answers cached for a minute.
 */

let t: TestContext
let rs: ApplicationFixture
let verifier: Verifier

beforeAll(async () => {
  t = await buildTestApp()
  const base = await listenOnFreePort(t)
  rs = await createApplication(t.db, { name: 'Resource API', resourceServer: true })
  verifier = createVerifier({
    mode: 'introspection',
    introspectionUrl: `${base}/oauth/introspect`,
    revocationStreamUrl: `${base}/oauth/revocations/stream`,
    clientId: rs.clientId,
    clientSecret: rs.clientSecret,
    cacheTtlSeconds: 60,
    now: () => t.clock().getTime(),
  })
  await verifier.ready()
})
afterAll(async () => {
  await verifier?.close()
  await t?.close()
})

const cachedOk = (token: string) => verifier.verifyCached(`Bearer ${token}`)?.ok === true

it("drops an application's tokens once the stream brings its suspension", async () => {
  const app = await createApplication(t.db)
  const user = await createUser(t.db)
  const tokens = [
    await createAccessToken(t.db, { userId: user.id, applicationId: app.id }),
    await createAccessToken(t.db, { userId: user.id, applicationId: app.id }),
  ]
  for (const { token } of tokens) expect((await verifier.verify(`Bearer ${token}`)).ok).toBe(true)
  for (const { token } of tokens) expect(cachedOk(token)).toBe(true)

  await suspendApplication(operator(t), app.id, t.clock())
  await until(() => tokens.every(({ token }) => !cachedOk(token)), NOTICE_WAIT_MS, 'the verifier drops the suspended application’s tokens')
  for (const { token } of tokens) expect((await verifier.verify(`Bearer ${token}`)).ok).toBe(false)
})

it("drops a suspended user's tokens once the stream brings the suspension", async () => {
  const app = await createApplication(t.db)
  const user = await createUser(t.db)
  const { token } = await createAccessToken(t.db, { userId: user.id, applicationId: app.id })
  expect((await verifier.verify(`Bearer ${token}`)).ok).toBe(true)
  await suspendUser(operator(t), user.id, t.clock())
  await until(() => !cachedOk(token), NOTICE_WAIT_MS, 'the verifier drops the suspended user’s token')
  expect((await verifier.verify(`Bearer ${token}`)).ok).toBe(false)
})
