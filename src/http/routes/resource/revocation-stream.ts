import type { FastifyInstance } from 'fastify'
import type { ClientAuthCache } from '../../../oauth/client-auth-cache.js'
import { extractClientCredentials } from '../../../oauth/client-auth.js'
import { ResourceServerOnlyError } from '../../../oauth/errors.js'
import type { RevocationBroadcaster } from '../../../revocation/broadcaster.js'

/** GET /oauth/revocations/stream: the events are described in src/revocation/broadcaster.ts. */
export default async function revocationStreamRoute(
  app: FastifyInstance,
  { clients, broadcaster }: { clients: ClientAuthCache; broadcaster: RevocationBroadcaster },
): Promise<void> {
  app.get('/oauth/revocations/stream', async (request, reply) => {
    // HTTP Basic only: a GET has no body, and credentials never go in a URL.
    const client = await clients.authenticate(extractClientCredentials({}, request.headers.authorization))
    if (!client.isResourceServer) {
      throw new ResourceServerOnlyError('Only applications an operator marked as resource servers may subscribe to revocations')
    }
    // Refused with JSON (429 or 503, Retry-After) before the stream starts; nothing awaits
    // between this check and `add`, so concurrent subscriptions cannot both take the last slot.
    broadcaster.admit(client)
    reply.hijack()
    const res = reply.raw
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    })
    res.socket?.setNoDelay(true)
    broadcaster.add(res, client)
    res.write('retry: 1000\n\nevent: ready\ndata:\n\n')
  })
}
