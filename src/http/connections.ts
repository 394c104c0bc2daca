import type { ServerResponse } from 'node:http'
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
 * Either made a SIGTERM take a minute, past most supervisors' grace period (docs/operating/backups-and-upgrades.md "Failures and
 * recovery"). Now the first is ended at once, as is one accepted after the close began, and the
 * second is answered with `Connection: close` (RFC 9112 §9.6), or ended once its answer is out.
 */
export function endConnectionsOnClose(app: FastifyInstance): void {
  const sockets = new Set<SocketWithAnswer>()
  let closing = false
  app.server.on('connection', (socket: SocketWithAnswer) => {
    if (closing) {
      socket.destroy()
      return
    }
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })
  app.addHook('preClose', (done) => {
    closing = true
    for (const socket of sockets) {
      const answer = socket._httpMessage
      // No answer in progress: the connection never sent a request, or is idle between two.
      if (answer == null) socket.destroy()
      else if (!answer.headersSent) answer.setHeader('connection', 'close')
      else if (!answer.writableFinished) answer.once('finish', () => socket.end())
    }
    done()
  })
}

/**
 * Node's HTTP server keeps the answer in progress on its socket, from the moment the request's
 * headers are read until the answer is finished (lib/_http_server.js, `assignSocket` and
 * `detachSocket`); its socket timeout reads it there too. Reading it at the close spares a second
 * `request` listener, which cost every request an emit through a copied list of listeners and a
 * map entry (docs/decisions/016-hot-path-rules.md).
 */
type SocketWithAnswer = Socket & { _httpMessage?: ServerResponse | null }
