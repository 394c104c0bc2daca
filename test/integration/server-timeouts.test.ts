import { connect, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { buildTestApp, type TestContext } from '../helpers/app.js'

/*
 * Node's HTTP server timeouts (src/app.ts, docs/operating/configuration.md): Fastify leaves requestTimeout
 * and connectionTimeout at 0, so before these settings a client that opened a connection and sent
 * nothing held it for ever.
 */

let defaults: TestContext
let short: TestContext
beforeAll(async () => {
  defaults = await buildTestApp()
  short = await buildTestApp(
    { HTTP_REQUEST_TIMEOUT_MS: '1000', HTTP_CONNECTION_TIMEOUT_MS: '300', HTTP_KEEP_ALIVE_TIMEOUT_MS: '200' },
    defaults.testDb,
  )
  await short.app.listen({ port: 0, host: '127.0.0.1' })
})
afterAll(async () => {
  await short.close()
  await defaults.close()
})

it('sets every timeout by default: 30 s for a request to arrive, 60 s of silence, 72 s of keep-alive', () => {
  expect(defaults.app.server.requestTimeout).toBe(30_000)
  expect(defaults.app.server.timeout).toBe(60_000)
  expect(defaults.app.server.keepAliveTimeout).toBe(72_000)
})

it('takes them from HTTP_REQUEST_TIMEOUT_MS, HTTP_CONNECTION_TIMEOUT_MS and HTTP_KEEP_ALIVE_TIMEOUT_MS', () => {
  expect(short.app.server.requestTimeout).toBe(1_000)
  expect(short.app.server.timeout).toBe(300)
  expect(short.app.server.keepAliveTimeout).toBe(200)
})

/**
 * Opens a raw connection to the short-timeout app; resolves with how long until the server closed it,
 * or null after 20 s: far past the timeouts under test, so a loaded machine cannot reach it.
 */
function closedAfter(send?: string, onData?: (socket: Socket, data: string) => void): Promise<number | null> {
  const { port } = short.app.server.address() as AddressInfo
  return new Promise((resolve) => {
    const started = Date.now()
    const socket = connect(port, '127.0.0.1', () => {
      if (send) socket.write(send)
    })
    const giveUp = setTimeout(() => {
      socket.destroy()
      resolve(null)
    }, 20_000)
    socket.setEncoding('utf8')
    socket.on('data', (data: string) => onData?.(socket, data))
    socket.on('error', () => {})
    socket.on('close', () => {
      clearTimeout(giveUp)
      resolve(Date.now() - started)
    })
  })
}

it('closes a connection on which the client sends nothing', async () => {
  const ms = await closedAfter()
  expect(ms).not.toBeNull()
  expect(ms!).toBeGreaterThanOrEqual(250)
})

it('closes an idle keep-alive connection after the keep-alive timeout', async () => {
  let answered = false
  const ms = await closedAfter('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n', (_, data) => {
    if (data.startsWith('HTTP/1.1 200')) answered = true
  })
  expect(answered).toBe(true)
  expect(ms).not.toBeNull()
})

/*
 * Closing (SIGTERM, src/server.ts) with the default 60 s connection timeout: a connection that
 * never sent a request (a browser's preconnect) is ended at once rather than holding the close for
 * a minute, while a request already in flight is still answered (src/http/connections.ts).
 */
it('closes at once past a connection that sent nothing, and still answers a request in flight', async () => {
  const closing = await buildTestApp({}, defaults.testDb)
  await closing.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = closing.app.server.address() as AddressInfo
  const open = (): Promise<Socket> =>
    new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1', () => resolve(socket))
      socket.on('error', () => {})
    })
  const silent = await open()
  const silentClosed = new Promise<void>((resolve) => silent.on('close', () => resolve()))
  const inFlight = await open()
  inFlight.setEncoding('utf8')
  let answer = ''
  inFlight.on('data', (data: string) => (answer += data))
  const inFlightEnded = new Promise<void>((resolve) => inFlight.on('close', () => resolve()))
  const body = 'token=abc'
  inFlight.write(
    `POST /oauth/revoke HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n`,
  )
  inFlight.write(body.slice(0, 3))
  // The headers are read (the request is in flight) before the close begins.
  await new Promise<void>((resolve) => closing.app.server.once('request', () => resolve()))

  let closed = false
  const closed$ = closing.close().then(() => (closed = true))
  await silentClosed
  expect(closed).toBe(false)
  inFlight.write(body.slice(3))
  await closed$
  // Ended by the server once answered, rather than kept alive for HTTP_KEEP_ALIVE_TIMEOUT_MS.
  await inFlightEnded
  expect(answer).toMatch(/^HTTP\/1\.1 401 /)
  expect(answer.toLowerCase()).toContain('\r\nconnection: close\r\n')
})

/*
 * A keep-alive connection whose answer is out and which sends nothing more is ended at the close,
 * not held for HTTP_KEEP_ALIVE_TIMEOUT_MS (72 s by default): between two requests it carries no
 * answer (src/http/connections.ts).
 */
it('closes at once past a keep-alive connection idle after its answer', async () => {
  const closing = await buildTestApp({}, defaults.testDb)
  await closing.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = closing.app.server.address() as AddressInfo
  const idle = await new Promise<Socket>((resolve) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket))
    socket.on('error', () => {})
  })
  idle.setEncoding('utf8')
  let answer = ''
  const answered = new Promise<void>((resolve) =>
    idle.on('data', (data: string) => {
      answer += data
      if (answer.endsWith('{"status":"ok"}')) resolve()
    }),
  )
  const idleClosed = new Promise<void>((resolve) => idle.on('close', () => resolve()))
  idle.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
  await answered
  expect(answer.toLowerCase()).toContain('\r\nconnection: keep-alive\r\n')

  await closing.close()
  await idleClosed
})
