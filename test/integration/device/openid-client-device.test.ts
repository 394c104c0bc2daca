import * as client from 'openid-client'
import { sha256Hex } from '../../../src/lib/crypto.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestContext } from '../../helpers/app.js'
import { listenOnLoopback } from '../../helpers/loopback.js'
import { type TestClient, buildOAuthTestApp, createClient, loggedInUser } from '../oauth/helpers.js'
import type { BrowserSession } from '../../helpers/browser-session.js'

/*
 * The device authorization grant (RFC 8628) driven by openid-client's own device-flow functions,
 * unmodified, against a listening server: initiateDeviceAuthorization, then
 * pollDeviceAuthorizationGrant, which waits `interval` seconds between polls with its own timers.
 * DEVICE_CODE_INTERVAL_SECONDS=1 keeps those waits short; the server judges time by the test's
 * clock, which the test moves by the same interval before each poll (customFetch, openid-client's
 * documented hook), so what the server sees is what a real device's timing would show.
 */

let t: TestContext
let issuer: URL
let app: TestClient
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

beforeAll(async () => {
  const listening = await listenOnLoopback((env) => buildOAuthTestApp({ ...env, DEVICE_CODE_INTERVAL_SECONDS: '1' }))
  t = listening.t
  issuer = new URL(listening.baseUrl)
  app = await createClient(t.db, { name: 'Gym Scoreboard', scopes: ['read', 'write'] })
  await t.db.updateTable('applications').set({ allow_device_flow: true }).where('id', '=', app.id).execute()
})
afterAll(async () => {
  await t.close()
})

/**
 * openid-client configured by discovery; `beforePoll` runs before each token request reaches the
 * server (its number from 1), `afterPoll` once its answer is back. The clock moves `advanceMs(poll)`.
 */
async function device(
  hooks: { advanceMs?: (poll: number) => number; afterPoll?: (poll: number) => Promise<void> } = {},
  of: TestClient = app,
) {
  // A public client (no secret) authenticates with client_id alone: openid-client's None().
  const auth = of.clientSecret === '' ? client.None() : undefined
  const config = await client.discovery(issuer, of.clientId, of.clientSecret || undefined, auth, {
    execute: [client.allowInsecureRequests],
  })
  let polls = 0
  config[client.customFetch] = async (url, options) => {
    const isPoll = new URL(url).pathname === '/oauth/token'
    if (!isPoll) return fetch(url, options as RequestInit)
    const poll = ++polls
    t.clock.advance(hooks.advanceMs?.(poll) ?? 1000)
    const response = await fetch(url, options as RequestInit)
    await hooks.afterPoll?.(poll)
    return response
  }
  return { config, polls: () => polls }
}

/** The user's side: the /device page with the code, then the consent page's answer. */
async function answerOnDevicePage(browser: BrowserSession, userCode: string, decision: 'approve' | 'deny') {
  const page = await browser.get(`/device?user_code=${encodeURIComponent(userCode)}`)
  expect(page.statusCode).toBe(200)
  // Prefilled, never answered by the link alone (RFC 8628 5.4).
  expect(page.body).toContain(`value="${userCode}"`)
  const consent = await browser.post('/device', { user_code: userCode.toLowerCase().replace('-', ' ') })
  expect(consent.statusCode).toBe(200)
  expect(consent.body).toContain('Authorize Gym Scoreboard')
  expect(consent.body).toContain('id="device-warning"')
  const requestId = /name="request_id" value="([^"]+)"/.exec(consent.body)![1]!
  const answered = await browser.post('/device/answer', { request_id: requestId, decision })
  expect(answered.statusCode).toBe(200)
  return answered
}

async function auditEvents(event: string) {
  return t.db.selectFrom('audit_events').select(['user_id', 'detail']).where('event', '=', event).execute()
}

describe('openid-client, device flow', () => {
  it('discovers the device authorization endpoint and the grant', async () => {
    const { config } = await device()
    expect(config.serverMetadata().device_authorization_endpoint).toBe(`${issuer.origin}/oauth/device_authorization`)
    expect(config.serverMetadata().grant_types_supported).toContain(DEVICE_GRANT)
  })

  it('approve: pending while the user has not answered, then one ordinary user token; the code is single use', async () => {
    const browser = await loggedInUser(t.app)
    const holder: { started?: client.DeviceAuthorizationResponse } = {}
    const { config } = await device({
      // The user answers after the device's first poll, which is then told authorization_pending.
      afterPoll: async (poll) => {
        if (poll === 1) await answerOnDevicePage(browser, holder.started!.user_code, 'approve')
      },
    })
    const started = (holder.started = await client.initiateDeviceAuthorization(config, { scope: 'read' }))
    expect(started.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/)
    expect(started.verification_uri).toBe(`${issuer.origin}/device`)
    expect(started.verification_uri_complete).toBe(`${issuer.origin}/device?user_code=${started.user_code}`)
    expect(started.expires_in).toBe(600)
    expect(started.interval).toBe(1)

    const tokens = await client.pollDeviceAuthorizationGrant(config, started)
    expect(tokens.token_type).toBe('bearer')
    expect(tokens.scope).toBe('read')

    const info = await fetch(`${issuer.origin}/oauth/token/info`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
    expect(info.status).toBe(200)
    const user = await t.db.selectFrom('users').select('id').where('email', '=', browser.email).executeTakeFirstOrThrow()
    expect(await info.json()).toMatchObject({ resource_owner_id: user.id, scope: ['read'] })

    // Recorded as consent is: Authorized Applications lists it, and the approval is audited.
    expect((await browser.get('/authorized-applications')).body).toContain('Gym Scoreboard')
    expect((await auditEvents('grant.given')).filter((e) => e.user_id === user.id)).toEqual([
      { user_id: user.id, detail: 'Scopes: read; approved for a device (device flow)' },
    ])
    // Neither code is stored in plain.
    const rows = await t.db.selectFrom('device_authorizations').selectAll().execute()
    expect(JSON.stringify(rows)).not.toContain(started.user_code.replace('-', ''))

    // Single use: the same device code again is invalid_grant.
    const again = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        grant_type: DEVICE_GRANT,
        device_code: started.device_code,
        client_id: app.clientId,
        client_secret: app.clientSecret,
      }).toString(),
    })
    expect(again.statusCode).toBe(400)
    expect(again.json()).toMatchObject({ error: 'invalid_grant' })
  })

  it('deny: access_denied, audited, and no token', async () => {
    const browser = await loggedInUser(t.app)
    const holder: { started?: client.DeviceAuthorizationResponse } = {}
    const { config } = await device({
      afterPoll: async (poll) => {
        if (poll === 1) {
          const done = await answerOnDevicePage(browser, holder.started!.user_code, 'deny')
          expect(done.body).toContain('Device refused')
        }
      },
    })
    const started = (holder.started = await client.initiateDeviceAuthorization(config, { scope: 'read write' }))
    const failure = await client.pollDeviceAuthorizationGrant(config, started).catch((e: unknown) => e)
    expect(failure).toBeInstanceOf(client.ResponseBodyError)
    expect((failure as client.ResponseBodyError).error).toBe('access_denied')
    const user = await t.db.selectFrom('users').select('id').where('email', '=', browser.email).executeTakeFirstOrThrow()
    expect(await auditEvents('grant.device_denied')).toContainEqual({ user_id: user.id, detail: 'Scopes: read write' })
    const tokens = await t.db.selectFrom('access_tokens').select('token_hash').where('user_id', '=', user.id).execute()
    expect(tokens).toEqual([])
  })

  it('expire: expired_token once the code outlives its 10 minutes unanswered', async () => {
    const { config } = await device({ advanceMs: (poll) => (poll === 2 ? 600_000 : 1000) })
    const started = await client.initiateDeviceAuthorization(config, { scope: 'read' })
    const failure = await client.pollDeviceAuthorizationGrant(config, started).catch((e: unknown) => e)
    expect(failure).toBeInstanceOf(client.ResponseBodyError)
    expect((failure as client.ResponseBodyError).error).toBe('expired_token')
  })

  it('slow down: a poll within the interval gets slow_down and 5 s more; openid-client waits longer and still gets the token', async () => {
    const browser = await loggedInUser(t.app)
    const holder: { started?: client.DeviceAuthorizationResponse } = {}
    const { config, polls } = await device({
      // The second poll arrives no time after the first (as the server sees it): too soon.
      advanceMs: (poll) => (poll === 2 ? 0 : poll === 1 ? 1000 : 6000),
      afterPoll: async (poll) => {
        if (poll === 2) {
          const row = await t.db
            .selectFrom('device_authorizations')
            .select('interval_seconds')
            .where('device_code_hash', '=', sha256Hex(holder.started!.device_code))
            .executeTakeFirstOrThrow()
          expect(row.interval_seconds).toBe(6)
          await answerOnDevicePage(browser, holder.started!.user_code, 'approve')
        }
      },
    })
    const started = (holder.started = await client.initiateDeviceAuthorization(config, { scope: 'read' }))
    const tokens = await client.pollDeviceAuthorizationGrant(config, started)
    expect(tokens.access_token).toMatch(/^gat_/)
    expect(polls()).toBe(3)
  })

  it('a native app without a secret: client_id alone at both endpoints, then an ordinary user token', async () => {
    const native = await createClient(t.db, { kind: 'native', name: 'Gym Scoreboard', redirectUris: ['http://127.0.0.1/callback'] })
    await t.db.updateTable('applications').set({ allow_device_flow: true }).where('id', '=', native.id).execute()
    const browser = await loggedInUser(t.app)
    const holder: { started?: client.DeviceAuthorizationResponse } = {}
    const { config } = await device(
      {
        afterPoll: async (poll) => {
          if (poll === 1) await answerOnDevicePage(browser, holder.started!.user_code, 'approve')
        },
      },
      native,
    )
    const started = (holder.started = await client.initiateDeviceAuthorization(config, { scope: 'read' }))
    const tokens = await client.pollDeviceAuthorizationGrant(config, started)
    expect(tokens.access_token).toMatch(/^gat_/)
    const row = await t.db
      .selectFrom('access_tokens')
      .select('application_id')
      .where('token_hash', '=', sha256Hex(tokens.access_token))
      .executeTakeFirstOrThrow()
    expect(row.application_id).toBe(native.id)
  })
})
