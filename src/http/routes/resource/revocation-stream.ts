import type { FastifyInstance } from 'fastify'
import type { ClientAuthCache } from '../../../oauth/client-auth-cache.js'
import { extractClientCredentials } from '../../../oauth/client-auth.js'
import type { RevocationBroadcaster } from '../../../revocation/broadcaster.js'

/** GET /oauth/revocations/stream: the events are described in src/revocation/broadcaster.ts. */
export default async function revocationStreamRoute(
  app: FastifyInstance,
  { clients, broadcaster }: { clients: ClientAuthCache; broadcaster: RevocationBroadcaster },
): Promise<void> {
  app.get('/oauth/revocations/stream', async (request, reply) => {
    // HTTP Basic only: a GET has no body, and credentials never go in a URL.
    await clients.authenticate(extractClientCredentials({}, request.headers.authorization))
    reply.hijack()
    const res = reply.raw
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    })
    res.socket?.setNoDelay(true)
    broadcaster.add(res)
    res.write('retry: 1000\n\nevent: ready\ndata:\n\n')
  })
}
