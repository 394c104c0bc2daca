import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { deleteApplication, regenerateSecret } from '../../../src/applications/applications.js'
import { revokeApplicationTokens } from '../../../src/operator/moderation.js'
import { revoke } from '../../../src/revocation/revoke.js'
import { type Verifier, createVerifier } from '@gatehouse/verifier'
import { EventStreamParser, type StreamEvent } from '../../../packages/verifier/src/revocation-stream-client.js'
import { type ApplicationFixture, basicAuth, createAccessToken, createApplication, createUser } from '../../helpers/factories.js'
import { buildTestApp, listenOnFreePort } from '../../helpers/app.js'
import { resourceServerTestFile } from '../../helpers/file-set-up.js'
import { NOTICE_WAIT_MS } from '../../helpers/propagation.js'
import { type TcpProxy, startTcpProxy } from '../../helpers/tcp-proxy.js'

/*
 * GET /oauth/revocations/stream, and the introspection-mode verifier that follows it, against
 * a listening Gatehouse.
 */

const { t, user, app, rs } = resourceServerTestFile({ resourceServerName: 'Resource server' })
let base: string
beforeAll(async () => {
  base = await listenOnFreePort(t)
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
  const state = { ended: false }
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
    state.ended = true
  })()
  await expect.poll(() => events.some((e) => e.event === 'ready')).toBe(true)
  return {
    res,
    events,
    raw,
    /** True once the server ended the stream (or the test closed it). */
    get ended() {
      return state.ended
    },
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

  it('refuses an application that is not a resource server with 403', async () => {
    const res = await fetch(`${base}/oauth/revocations/stream`, { headers: { authorization: basicAuth(app.clientId, app.clientSecret) } })
    expect(res.status).toBe(403)
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    expect(await res.json()).toMatchObject({ error: 'unauthorized_client' })
  })

  it('sends the digest of every revoked token to a resource server, and nothing else', async () => {
    const stream = await subscribe(rs)
    try {
      expect(stream.res.headers.get('content-type')).toMatch(/^text\/event-stream/)
      expect(stream.res.headers.get('cache-control')).toBe('no-store')
      const tok = await newToken()
      expect((await revokeOverHttp(tok.token)).status).toBe(200)
      await expect.poll(() => stream.events).toContainEqual({ event: 'revoked', data: tok.digest })

      // "Revoke access": the digests of that user's tokens for the application, no user id.
      const [a, b] = [await newToken(), await newToken()]
      await revoke(t.revocation, { kind: 'access-revoked', userId: user.id, applicationId: app.id }, new Date())
      await expect
        .poll(() => stream.events.filter((e) => e.event === 'revoked').flatMap((e) => e.data.split(',')))
        .toEqual(expect.arrayContaining([a.digest, b.digest]))
      expect(stream.raw.join('')).not.toContain(user.id)
      expect(stream.raw.join('')).not.toContain(app.id)
    } finally {
      await stream.close()
    }
  })

  it("announces the digests of a deleted application's tokens, not a reset, and ends its own streams", async () => {
    const stream = await subscribe(rs)
    const owner = await createUser(t.db)
    const doomed = await createApplication(t.db, { ownerId: owner.id, resourceServer: true })
    const own = await subscribe(doomed)
    try {
      // More than one batch of 1,000, and one token already revoked (announced back then).
      const tokens = await Promise.all([1, 2, 3].map(() => createAccessToken(t.db, { userId: user.id, applicationId: doomed.id })))
      const bulk = Array.from({ length: 1050 }, () => randomBytes(32).toString('hex'))
      await t.db
        .insertInto('access_tokens')
        .values(bulk.map((h) => ({ token_hash: h, application_id: doomed.id, user_id: user.id, scopes: ['read'], created_at: t.clock() })))
        .execute()
      const earlier = await createAccessToken(t.db, { userId: user.id, applicationId: doomed.id })
      await t.db.updateTable('access_tokens').set({ revoked_at: t.clock() }).where('token_hash', '=', earlier.digest).execute()
      await deleteApplication(t.db, t.deps.bus, doomed.id, owner.id, t.clock(), t.deps.audit.trail(owner.id, null))
      const heard = () => stream.events.filter((e) => e.event === 'revoked').flatMap((e) => e.data.split(','))
      await expect.poll(() => heard().length).toBeGreaterThanOrEqual(1053)
      expect(new Set(heard())).toEqual(new Set([...tokens.map((k) => k.digest), ...bulk]))
      expect(stream.events.filter((e) => e.event === 'revoked').every((e) => e.data.split(',').length <= 100)).toBe(true)
      await expect.poll(() => own.ended).toBe(true)
      expect(stream.ended).toBe(false)
      expect(stream.events.map((e) => e.event)).not.toContain('reset')
      expect(stream.raw.join('')).not.toContain(doomed.id)
      // Its credentials are gone: reconnecting is refused.
      const again = await fetch(`${base}/oauth/revocations/stream`, {
        headers: { authorization: basicAuth(doomed.clientId, doomed.clientSecret) },
      })
      expect(again.status).toBe(401)
    } finally {
      await own.close()
      await stream.close()
    }
  })

  it('sends a "Revoke access" of up to 1,000 tokens as their digests, and one of more as a reset', async () => {
    /** A user holding `n` live tokens of `app`, inserted in one statement; their digests. */
    const holderOf = async (n: number) => {
      const holder = await createUser(t.db)
      const digests = Array.from({ length: n }, () => randomBytes(32).toString('hex'))
      await t.db
        .insertInto('access_tokens')
        .values(
          digests.map((h) => ({ token_hash: h, application_id: app.id, user_id: holder.id, scopes: ['read'], created_at: t.clock() })),
        )
        .execute()
      return { holder, digests }
    }
    const stream = await subscribe(rs)
    try {
      const heard = () => stream.events.filter((e) => e.event === 'revoked').flatMap((e) => e.data.split(','))
      const atBound = await holderOf(1000)
      await revoke(t.revocation, { kind: 'access-revoked', userId: atBound.holder.id, applicationId: app.id }, t.clock())
      await expect.poll(() => heard().length).toBeGreaterThanOrEqual(1000)
      expect(new Set(heard())).toEqual(new Set(atBound.digests))
      expect(stream.events.map((e) => e.event)).not.toContain('reset')

      const beyond = await holderOf(1001)
      const before = stream.events.length
      await revoke(t.revocation, { kind: 'access-revoked', userId: beyond.holder.id, applicationId: app.id }, t.clock())
      await expect.poll(() => stream.events.slice(before)).toEqual([{ event: 'reset', data: '' }])
      expect(heard()).toHaveLength(1000)
    } finally {
      await stream.close()
    }
  })

  it("announces the digests of `gatehouse tokens revoke`, and keeps the application's own streams open", async () => {
    const stream = await subscribe(rs)
    const owner = await createUser(t.db)
    const kept = await createApplication(t.db, { ownerId: owner.id, resourceServer: true })
    const own = await subscribe(kept)
    try {
      const tokens = await Promise.all([1, 2].map(() => createAccessToken(t.db, { userId: user.id, applicationId: kept.id })))
      const ctx = { db: t.db, bus: t.deps.bus, record: async () => {} }
      expect(await revokeApplicationTokens(ctx, kept.id, undefined, t.clock())).toEqual({ revoked: 2 })
      const heard = () => stream.events.filter((e) => e.event === 'revoked').flatMap((e) => e.data.split(','))
      await expect.poll(() => new Set(heard())).toEqual(new Set(tokens.map((k) => k.digest)))
      // The digests reached its own stream too, and nothing after them ended it.
      await expect.poll(() => own.events.filter((e) => e.event === 'revoked').length).toBeGreaterThan(0)
      expect(own.ended).toBe(false)
    } finally {
      await own.close()
      await stream.close()
    }
  })

  it("ends an application's streams when its secret is regenerated, and no one else's", async () => {
    const owner = await createUser(t.db)
    const rotated = await createApplication(t.db, { ownerId: owner.id, resourceServer: true })
    const own = await subscribe(rotated)
    const other = await subscribe(rs)
    try {
      await regenerateSecret(t.db, t.deps.bus, rotated.id, owner.id, t.clock(), t.deps.audit.trail(owner.id, null))
      await expect.poll(() => own.ended).toBe(true)
      expect(other.ended).toBe(false)
    } finally {
      await own.close()
      await other.close()
    }
  })

  it('is counted in /metrics once the server ends it, and a refused subscription once', async () => {
    const count = async (status: number) => {
      const body = (await t.app.inject('/metrics')).body
      const line = new RegExp(
        `^gatehouse_http_requests_total\\{method="GET",route="/oauth/revocations/stream",status="${status}"\\} (\\d+)$`,
        'm',
      )
      return Number(line.exec(body)?.[1] ?? 0)
    }
    const owner = await createUser(t.db)
    const rotated = await createApplication(t.db, { ownerId: owner.id, resourceServer: true })
    const [served, refused] = [await count(200), await count(401)]
    const stream = await subscribe(rotated)
    try {
      expect(await count(200)).toBe(served)
      await regenerateSecret(t.db, t.deps.bus, rotated.id, owner.id, t.clock(), t.deps.audit.trail(owner.id, null))
      await expect.poll(() => stream.ended).toBe(true)
      await expect.poll(() => count(200)).toBe(served + 1)
      expect((await fetch(`${base}/oauth/revocations/stream`)).status).toBe(401)
      await expect.poll(() => count(401)).toBe(refused + 1)
      // Counted when answered, not again when the answer is finished.
      await fetch(`${base}/healthz`)
      expect(await count(401)).toBe(refused + 1)
    } finally {
      await stream.close()
    }
  })

  it('refuses a fifth stream of one application with 429 and Retry-After, while other applications subscribe', async () => {
    const busy = await createApplication(t.db, { resourceServer: true })
    const streams = [await subscribe(busy), await subscribe(busy), await subscribe(busy), await subscribe(busy)]
    try {
      const fifth = await fetch(`${base}/oauth/revocations/stream`, {
        headers: { authorization: basicAuth(busy.clientId, busy.clientSecret) },
      })
      expect(fifth.status).toBe(429)
      expect(fifth.headers.get('retry-after')).toMatch(/^\d+$/)
      expect(await fifth.json()).toMatchObject({ error: 'invalid_request' })
      const another = await subscribe(rs)
      await another.close()
      // A slot frees when a stream ends.
      await streams.pop()!.close()
      await expect.poll(() => t.deps.revocationFeed.subscribers).toBe(3)
      streams.push(await subscribe(busy))
    } finally {
      for (const s of streams) await s.close()
    }
  })

  it('cuts a subscriber that does not read once its unsent output passes the bound', async () => {
    await expect.poll(() => t.deps.revocationFeed.subscribers).toBe(0)
    const socket = connect(Number(new URL(base).port), '127.0.0.1')
    let closed = false
    socket.on('close', () => (closed = true))
    socket.on('error', () => {})
    socket.write(`GET /oauth/revocations/stream HTTP/1.1\r\nHost: x\r\nAuthorization: ${basicAuth(rs.clientId, rs.clientSecret)}\r\n\r\n`)
    socket.pause()
    await expect.poll(() => t.deps.revocationFeed.subscribers).toBe(1)
    const digests = Array.from({ length: 100 }, (_, i) => i.toString(16).padStart(64, '0'))
    // The kernel's socket buffers take some megabytes first; give up far beyond them.
    for (let sent = 0; t.deps.revocationFeed.subscribers > 0 && sent < 200 << 20; sent += 100 * 65) {
      t.deps.revocationFeed.apply({ kind: 'tokens', digests }, 'notify')
      if (sent % (1 << 20) < 100 * 65) await new Promise((r) => setImmediate(r))
    }
    expect(t.deps.revocationFeed.subscribers).toBe(0)
    // Reading again, the client finds what the kernel held and then the end of the connection.
    socket.resume()
    await expect.poll(() => closed).toBe(true)
    socket.destroy()
  })
})

describe('stream limits for the whole process', () => {
  it('refuses a stream beyond STREAMS_TOTAL with 503 and Retry-After', async () => {
    const small = await buildTestApp({ STREAMS_TOTAL: '1' }, t.testDb)
    try {
      const smallBase = await listenOnFreePort(small)
      const controller = new AbortController()
      const first = await fetch(`${smallBase}/oauth/revocations/stream`, {
        headers: { authorization: basicAuth(rs.clientId, rs.clientSecret) },
        signal: controller.signal,
      })
      expect(first.status).toBe(200)
      const other = await createApplication(t.db, { resourceServer: true })
      const second = await fetch(`${smallBase}/oauth/revocations/stream`, {
        headers: { authorization: basicAuth(other.clientId, other.clientSecret) },
      })
      expect(second.status).toBe(503)
      expect(second.headers.get('retry-after')).toMatch(/^\d+$/)
      expect(await second.json()).toMatchObject({ error: 'temporarily_unavailable' })
      controller.abort()
    } finally {
      await small.close()
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
          kind: 'user',
          userId: user.id,
          subject: user.id,
          clientId: app.clientId,
          applicationId: null,
          username: user.email,
          scopes: ['read', 'write'],
          issuedAt: Math.floor(tok.createdAt.getTime() / 1000),
          expiresAt: null,
          jkt: null,
          audience: null,
        },
      })
      expect(verifier.verifyCached(`Bearer ${tok.token}`, 'read')).toMatchObject({ ok: true })
      expect(await verifier.verify(`Bearer ${tok.token}`, 'read')).toMatchObject({ ok: true })
    } finally {
      await verifier.close()
    }
  })

  it('refuses a token once the stream brings its revocation', async () => {
    const verifier = introspectionVerifier()
    try {
      await verifier.ready()
      for (let i = 0; i < 5; i++) {
        const tok = await newToken()
        expect((await verifier.verify(`Bearer ${tok.token}`)).ok).toBe(true)
        expect((await revokeOverHttp(tok.token)).status).toBe(200)
        // The event, not its speed: the cached answer goes once the stream's notice arrives
        // (NOTICE_WAIT_MS is a safety net; without the notice the entry would live for its TTL).
        await expect
          .poll(() => verifier.verifyCached(`Bearer ${tok.token}`)?.ok ?? false, { timeout: NOTICE_WAIT_MS, interval: 2 })
          .toBe(false)
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

    it('keeps no answer beyond the TTL while down, and refuses again once reconnected and the notice arrives', async () => {
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
        await expect.poll(() => verifier.notifications, { timeout: NOTICE_WAIT_MS }).toBe('connected')
        // Reconnecting forgets what was cached while down (notices may have been missed).
        expect(verifier.verifyCached(`Bearer ${other.token}`)).toBeUndefined()

        expect((await verifier.verify(`Bearer ${other.token}`)).ok).toBe(true)
        expect((await revokeOverHttp(other.token)).status).toBe(200)
        await expect
          .poll(() => verifier.verifyCached(`Bearer ${other.token}`)?.ok ?? false, { timeout: NOTICE_WAIT_MS, interval: 2 })
          .toBe(false)
      } finally {
        await verifier.close()
      }
    })
  })
})
