import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'

/**
 * A graceful close that ends every connection as soon as it carries nothing more.
 *
 * Fastify's close ends the keep-alive connections idle at that moment and lets requests in
 * flight finish, but two kinds of connection still held it open, each for a timeout:
 * - one that has not sent its first request, which Node counts as active, until
 *   HTTP_CONNECTION_TIMEOUT_MS (60 s): browsers open these ahead of need (Chromium's preconnect);
 * - one whose request was in flight, answered with `Connection: keep-alive` and then left idle
 *   until HTTP_KEEP_ALIVE_TIMEOUT_MS (72 s).
 * Either made a SIGTERM take a minute, past most supervisors' grace period (README "Failures and
 * recovery"). Now the first is ended at once, as is one accepted after the close began, and the
 * second is answered with `Connection: close` (RFC 9112 §9.6), or ended once its answer is out.
 */
export function endConnectionsOnClose(app: FastifyInstance): void {
  const sockets = new Set<Socket>()
  // The latest request of each connection; none yet means it never sent one.
  const latest = new Map<Socket, ServerResponse>()
  let closing = false
  app.server.on('connection', (socket: Socket) => {
    if (closing) {
      socket.destroy()
      return
    }
    sockets.add(socket)
    socket.once('close', () => {
      sockets.delete(socket)
      latest.delete(socket)
    })
  })
  app.server.on('request', (request: IncomingMessage, response: ServerResponse) => latest.set(request.socket, response))
  app.addHook('preClose', (done) => {
    closing = true
    for (const socket of sockets) {
      const response = latest.get(socket)
      if (response === undefined) socket.destroy()
      else if (!response.headersSent) response.setHeader('connection', 'close')
      else if (!response.writableFinished) response.once('finish', () => socket.end())
    }
    done()
  })
}
