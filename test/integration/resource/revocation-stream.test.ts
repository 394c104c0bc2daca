import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { deleteApplication } from '../../../src/console/applications.js'
import { revoke } from '../../../src/revocation/revoke.js'
import { type Verifier, createVerifier } from '@gatehouse/verifier'
import { EventStreamParser, type StreamEvent } from '../../../packages/verifier/src/revocation-stream-client.js'
import {
  type ApplicationFixture,
  type UserFixture,
  basicAuth,
  createAccessToken,
  createApplication,
  createUser,
} from '../../helpers/factories.js'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { type TcpProxy, startTcpProxy } from '../../helpers/tcp-proxy.js'

/*
 * GET /oauth/revocations/stream, and the introspection-mode verifier that follows it, against
 * a listening Gatehouse.
 */

let t: TestContext
let base: string
let user: UserFixture
let app: ApplicationFixture
let rs: ApplicationFixture

beforeAll(async () => {
  t = await buildTestApp()
  await t.app.listen({ port: 0, host: '127.0.0.1' })
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`
  user = await createUser(t.db)
  app = await createApplication(t.db, { ownerId: user.id })
  rs = await createApplication(t.db, { name: 'Resource server' })
})
afterAll(async () => {
  await t.close()
})

const newToken = (scopes = ['read']) => createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes })

function revokeOverHttp(token: string) {
  return fetch(`${base}/oauth/revoke`, {
    method: 'POST',
    headers: { authorization: basicAuth(app.clientId, app.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: `token=${token}`,
  })
}

/** Reads the stream raw, as any SSE client would. */
async function subscribe(auth: ApplicationFixture) {
  const controller = new AbortController()
  const res = await fetch(`${base}/oauth/revocations/stream`, {
    headers: { authorization: basicAuth(auth.clientId, auth.clientSecret) },
    signal: controller.signal,
  })
  const events: StreamEvent[] = []
  const raw: string[] = []
  const parser = new EventStreamParser((e) => events.push(e))
  const reading = (async () => {
    const decoder = new TextDecoder()
    try {
      for await (const chunk of res.body!) {
        const text = decoder.decode(chunk as Uint8Array, { stream: true })
        raw.push(text)
        parser.push(text)
      }
    } catch {
      // aborted
    }
  })()
  await expect.poll(() => events.some((e) => e.event === 'ready')).toBe(true)
  return {
    res,
    events,
    raw,
    async close() {
      controller.abort()
      await reading
    },
  }
}

function introspectionVerifier(options: { streamBase?: string; cacheTtlSeconds?: number; clientSecret?: string } = {}): Verifier {
  const streamBase = options.streamBase ?? base
  return createVerifier({
    mode: 'introspection',
    introspectionUrl: `${base}/oauth/introspect`,
    revocationStreamUrl: `${streamBase}/oauth/revocations/stream`,
    clientId: rs.clientId,
    clientSecret: options.clientSecret ?? rs.clientSecret,
    cacheTtlSeconds: options.cacheTtlSeconds ?? 60,
    now: () => t.clock().getTime(),
  })
}

describe('GET /oauth/revocations/stream', () => {
  it('requires client credentials over HTTP Basic', async () => {
    const none = await fetch(`${base}/oauth/revocations/stream`)
    expect(none.status).toBe(401)
    expect(await none.json()).toMatchObject({ error: 'invalid_client' })
    const wrong = await fetch(`${base}/oauth/revocations/stream`, { headers: { authorization: basicAuth(rs.clientId, 'gcs_wrong') } })
    expect(wrong.status).toBe(401)
    const inQuery = await fetch(`${base}/oauth/revocations/stream?client_id=${rs.clientId}&client_secret=${rs.clientSecret}`)
    expect(inQuery.status).toBe(401)
  })

  it('sends the digest of every revoked token to any registered client, and nothing else', async () => {
    const stream = await subscribe(rs)
    try {
      expect(stream.res.headers.get('content-type')).toMatch(/^text\/event-stream/)
      expect(stream.res.headers.get('cache-control')).toBe('no-store')
      const tok = await newToken()
      expect((await revokeOverHttp(tok.token)).status).toBe(200)
      await expect.poll(() => stream.events).toContainEqual({ event: 'revoked', data: tok.digest })

      // "Revoke access": the digests of that user's tokens for the application, no user id.
      const [a, b] = [await newToken(), await newToken()]
      await revoke(t.revocation, { kind: 'user-application', userId: user.id, applicationId: app.id }, new Date())
      await expect
        .poll(() => stream.events.filter((e) => e.event === 'revoked').flatMap((e) => e.data.split(',')))
        .toEqual(expect.arrayContaining([a.digest, b.digest]))
      expect(stream.raw.join('')).not.toContain(user.id)
      expect(stream.raw.join('')).not.toContain(app.id)
    } finally {
      await stream.close()
    }
  })

  it('tells subscribers to forget everything when an application is deleted', async () => {
    const stream = await subscribe(rs)
    try {
      const owner = await createUser(t.db)
      const doomed = await createApplication(t.db, { ownerId: owner.id })
      await deleteApplication(t.db, t.deps.bus, doomed.id, owner.id, t.clock())
      await expect.poll(() => stream.events.map((e) => e.event)).toContain('reset')
      expect(stream.raw.join('')).not.toContain(doomed.id)
    } finally {
      await stream.close()
    }
  })
})

describe('verifier in introspection mode', () => {
  it('checks tokens by introspection and caches the answer', async () => {
    const verifier = introspectionVerifier()
    try {
      await verifier.ready()
      expect(verifier.notifications).toBe('connected')
      const tok = await newToken(['read', 'write'])
      const result = await verifier.verify(`Bearer ${tok.token}`, 'write_events')
      expect(result).toEqual({
        ok: true,
        token: {
          userId: user.id,
          clientId: app.clientId,
          applicationId: null,
          username: user.email,
          scopes: ['read', 'write'],
          issuedAt: Math.floor(tok.createdAt.getTime() / 1000),
        },
      })
      expect(verifier.verifyCached(`Bearer ${tok.token}`, 'read')).toMatchObject({ ok: true })
      expect(await verifier.verify(`Bearer ${tok.token}`, 'read')).toMatchObject({ ok: true })
    } finally {
      await verifier.close()
    }
  })

  it('refuses a token within a second of its revocation, through the stream', async () => {
    const verifier = introspectionVerifier()
    try {
      await verifier.ready()
      for (let i = 0; i < 5; i++) {
        const tok = await newToken()
        expect((await verifier.verify(`Bearer ${tok.token}`)).ok).toBe(true)
        const started = performance.now()
        expect((await revokeOverHttp(tok.token)).status).toBe(200)
        await expect.poll(() => verifier.verifyCached(`Bearer ${tok.token}`)?.ok ?? false, { timeout: 1000, interval: 2 }).toBe(false)
        expect(performance.now() - started).toBeLessThan(1000)
        expect(await verifier.verify(`Bearer ${tok.token}`)).toMatchObject({ ok: false, status: 401, error: 'invalid_token' })
      }
    } finally {
      await verifier.close()
    }
  })

  it('answers 503 when it cannot introspect (wrong credentials or Gatehouse down), and caches nothing', async () => {
    const tok = await newToken()
    const wrong = createVerifier({
      mode: 'introspection',
      introspectionUrl: `${base}/oauth/introspect`,
      clientId: rs.clientId,
      clientSecret: 'gcs_wrong',
    })
    const down = createVerifier({
      mode: 'introspection',
      introspectionUrl: 'http://127.0.0.1:9/oauth/introspect',
      clientId: rs.clientId,
      clientSecret: rs.clientSecret,
    })
    try {
      for (const v of [wrong, down]) {
        expect(v.notifications).toBe('none')
        expect(await v.verify(`Bearer ${tok.token}`)).toMatchObject({ ok: false, status: 503, error: 'temporarily_unavailable' })
        expect(v.verifyCached(`Bearer ${tok.token}`)).toBeUndefined()
      }
    } finally {
      await wrong.close()
      await down.close()
    }
  })

  describe('when the stream drops', () => {
    let proxy: TcpProxy
    beforeAll(async () => {
      proxy = await startTcpProxy('127.0.0.1', Number(new URL(base).port))
    })
    afterAll(async () => {
      await proxy.close()
    })

    it('keeps no answer beyond the TTL while down, and refuses within a second again once reconnected', async () => {
      const verifier = introspectionVerifier({ streamBase: `http://127.0.0.1:${proxy.port}`, cacheTtlSeconds: 10 })
      try {
        await verifier.ready()
        const tok = await newToken()
        expect((await verifier.verify(`Bearer ${tok.token}`)).ok).toBe(true)

        proxy.cut()
        await expect.poll(() => verifier.notifications).toBe('disconnected')
        expect((await revokeOverHttp(tok.token)).status).toBe(200)
        // The notice is lost: the cached answer stands, but only until the TTL ends.
        t.clock.advance(9_999)
        expect(verifier.verifyCached(`Bearer ${tok.token}`)).toMatchObject({ ok: true })
        t.clock.advance(1)
        expect(await verifier.verify(`Bearer ${tok.token}`)).toMatchObject({ ok: false, status: 401 })

        const other = await newToken()
        expect((await verifier.verify(`Bearer ${other.token}`)).ok).toBe(true)
        proxy.restore()
        await expect.poll(() => verifier.notifications, { timeout: 5000 }).toBe('connected')
        // Reconnecting forgets what was cached while down (notices may have been missed).
        expect(verifier.verifyCached(`Bearer ${other.token}`)).toBeUndefined()

        expect((await verifier.verify(`Bearer ${other.token}`)).ok).toBe(true)
        expect((await revokeOverHttp(other.token)).status).toBe(200)
        await expect.poll(() => verifier.verifyCached(`Bearer ${other.token}`)?.ok ?? false, { timeout: 1000, interval: 2 }).toBe(false)
      } finally {
        await verifier.close()
      }
    })
  })
})
