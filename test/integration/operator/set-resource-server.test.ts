import { afterAll, beforeAll, expect, it } from 'vitest'
import { setResourceServer, suspendApplication } from '../../../src/operator/moderation.js'
import { EventStreamParser, type StreamEvent } from '../../../packages/verifier/src/revocation-stream-client.js'
import { type TestContext, buildTestApp, listenOnFreePort } from '../../helpers/app.js'
import { until } from '../../helpers/oauth-load.js'
import { NOTICE_WAIT_MS } from '../../helpers/propagation.js'
import {
  type AccessTokenFixture,
  type ApplicationFixture,
  type UserFixture,
  basicAuth,
  createAccessToken,
  createApplication,
  createUser,
} from '../../helpers/factories.js'
import { INACTIVE, introspect, operator } from './helpers.js'

/*
 * An operator marks an application as a resource server, or stops (docs/resource-apis.md):
 * unmarked, it learns nothing of another application's token and may not subscribe to the
 * revocation stream; marked, it gets the full answer with `username` at once, because the change
 * is announced like a new secret and drops the cached authentication of the client (here at
 * once, on another instance once the notice arrives); unmarked again, its open streams are closed. A
 * suspended resource server's streams end too, and it authenticates nowhere.
 */

let t: TestContext
let b: TestContext
const bases: Record<'t' | 'b', string> = { t: '', b: '' }
let user: UserFixture
let tokenOwner: ApplicationFixture
let tok: AccessTokenFixture
let api: ApplicationFixture

beforeAll(async () => {
  t = await buildTestApp()
  b = await buildTestApp({}, t.testDb)
  for (const [name, instance] of [
    ['t', t],
    ['b', b],
  ] as const) {
    bases[name] = await listenOnFreePort(instance)
  }
  user = await createUser(t.db, { email: 'reader@example.com' })
  tokenOwner = await createApplication(t.db, { name: 'Token owner' })
  tok = await createAccessToken(t.db, { userId: user.id, applicationId: tokenOwner.id, scopes: ['read'] })
  api = await createApplication(t.db, { name: 'Team API' })
})
afterAll(async () => {
  await b?.close()
  await t?.close()
})

const FULL_ANSWER = () => ({
  active: true,
  scope: 'read',
  client_id: tokenOwner.clientId,
  username: 'reader@example.com',
  sub: user.id,
  token_type: 'Bearer',
  iat: Math.floor(tok.createdAt.getTime() / 1000),
})

function connect(base: string, caller: ApplicationFixture): { response: Promise<Response>; abort: () => void } {
  const controller = new AbortController()
  const response = fetch(`${base}/oauth/revocations/stream`, {
    headers: { authorization: basicAuth(caller.clientId, caller.clientSecret) },
    signal: controller.signal,
  })
  return { response, abort: () => controller.abort() }
}

/** An open stream, read as any SSE client would, once its `ready` event has arrived. */
async function subscribe(base: string, caller: ApplicationFixture) {
  const { response, abort } = connect(base, caller)
  const res = await response
  expect(res.status).toBe(200)
  const events: StreamEvent[] = []
  const parser = new EventStreamParser((e) => events.push(e))
  const state = { ended: false }
  const reading = (async () => {
    const decoder = new TextDecoder()
    try {
      for await (const chunk of res.body!) parser.push(decoder.decode(chunk as Uint8Array, { stream: true }))
    } catch {
      // aborted by the test
    }
    state.ended = true
  })()
  await until(() => events.some((e) => e.event === 'ready'), NOTICE_WAIT_MS, 'the ready event')
  return {
    get ended() {
      return state.ended
    },
    async close() {
      abort()
      await reading
    },
  }
}

async function streamStatus(base: string, caller: ApplicationFixture): Promise<{ status: number; body: unknown }> {
  const { response, abort } = connect(base, caller)
  const res = await response
  const body = res.status === 200 ? undefined : await res.json()
  abort()
  return { status: res.status, body }
}

it('unmarked: another application\'s token answers {"active":false}, and the stream is refused with 403', async () => {
  for (const instance of [t, b]) {
    const res = await introspect(instance, api, tok.token)
    expect(res.statusCode).toBe(200)
    expect(res.body).toBe(INACTIVE)
  }
  for (const base of [bases.t, bases.b]) {
    expect(await streamStatus(base, api)).toEqual({ status: 403, body: expect.objectContaining({ error: 'unauthorized_client' }) })
  }
  // The token itself is active: a resource server is told so.
  const rs = await createApplication(t.db, { resourceServer: true })
  expect((await introspect(t, rs, tok.token)).json()).toEqual(FULL_ANSWER())
})

it('marked: the full answer with username at once here, on the other instance once the notice arrives, and the stream opens', async () => {
  // Both instances hold the application's authentication (not a resource server) in their caches.
  expect((await introspect(t, api, tok.token)).body).toBe(INACTIVE)
  expect((await introspect(b, api, tok.token)).body).toBe(INACTIVE)

  expect(await setResourceServer(operator(t), api.id, true, t.clock())).toEqual({ changed: true })
  expect(await setResourceServer(operator(t), api.id, true, t.clock())).toEqual({ changed: false })
  expect((await introspect(t, api, tok.token)).json()).toEqual(FULL_ANSWER())
  await until(async () => (await introspect(b, api, tok.token)).body !== INACTIVE, NOTICE_WAIT_MS, 'the other instance to hear of it')
  expect((await introspect(b, api, tok.token)).json()).toEqual(FULL_ANSWER())

  const stream = await subscribe(bases.t, api)
  await stream.close()
})

it('unmarked again: its open streams on both instances are closed, and it is back to {"active":false} and 403', async () => {
  const here = await subscribe(bases.t, api)
  const there = await subscribe(bases.b, api)
  // Another resource server's stream is not touched.
  const other = await createApplication(t.db, { resourceServer: true })
  const bystander = await subscribe(bases.t, other)
  try {
    expect(await setResourceServer(operator(t), api.id, false, t.clock())).toEqual({ changed: true })
    await until(() => here.ended, NOTICE_WAIT_MS, "this instance's stream closed")
    await until(() => there.ended, NOTICE_WAIT_MS, "the other instance's stream closed")
    expect(bystander.ended).toBe(false)

    expect((await introspect(t, api, tok.token)).body).toBe(INACTIVE)
    await until(async () => (await introspect(b, api, tok.token)).body === INACTIVE, NOTICE_WAIT_MS, 'the other instance to hear of it')
    for (const base of [bases.t, bases.b]) expect((await streamStatus(base, api)).status).toBe(403)
  } finally {
    await here.close()
    await there.close()
    await bystander.close()
  }
})

it('a suspended resource server: its open streams close, and it can neither reconnect nor introspect', async () => {
  const suspended = await createApplication(t.db, { name: 'Suspended API', resourceServer: true })
  const other = await createApplication(t.db, { resourceServer: true })
  expect((await introspect(t, suspended, tok.token)).json()).toEqual(FULL_ANSWER())
  const here = await subscribe(bases.t, suspended)
  const there = await subscribe(bases.b, suspended)
  const bystander = await subscribe(bases.t, other)
  try {
    await suspendApplication(operator(t), suspended.id, t.clock())
    await until(() => here.ended, NOTICE_WAIT_MS, "this instance's stream closed")
    await until(() => there.ended, NOTICE_WAIT_MS, "the other instance's stream closed")
    expect(bystander.ended).toBe(false)
    for (const base of [bases.t, bases.b]) {
      expect(await streamStatus(base, suspended)).toEqual({ status: 401, body: expect.objectContaining({ error: 'invalid_client' }) })
    }
    for (const instance of [t, b]) expect((await introspect(instance, suspended, tok.token)).statusCode).toBe(401)
    // The token it was checking belongs to another application: still active.
    expect((await introspect(t, other, tok.token)).json()).toEqual(FULL_ANSWER())
  } finally {
    await here.close()
    await there.close()
    await bystander.close()
  }
})
