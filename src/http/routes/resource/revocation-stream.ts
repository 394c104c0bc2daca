import type { FastifyInstance } from 'fastify'
import type { ClientAuthCache } from '../../../oauth/client-auth-cache.js'
import { extractClientCredentials } from '../../../oauth/client-auth.js'
import { ResourceServerOnlyError, SlowDownError, TemporarilyUnavailableError } from '../../../services.js'
import type { RevocationFeed, StreamRefusal } from '../../../revocation/stream-feed.js'
import { RevocationEventStreams } from './revocation-events.js'

/** A refused subscription as the OAuth JSON error it is answered with: 429 or 503, with Retry-After. */
function refusalError(refusal: StreamRefusal): SlowDownError | TemporarilyUnavailableError {
  return refusal.reason === 'application-limit'
    ? new SlowDownError(`At most ${refusal.limit} revocation streams per application`, refusal.retryAfterSeconds)
    : new TemporarilyUnavailableError('Too many revocation streams on this server', refusal.retryAfterSeconds)
}

/** GET /oauth/revocations/stream: the events are described in ./revocation-events.ts. */
export default async function revocationStreamRoute(
  app: FastifyInstance,
  { clients, feed }: { clients: ClientAuthCache; feed: RevocationFeed },
): Promise<void> {
  const streams = new RevocationEventStreams(feed)
  app.addHook('preClose', async () => streams.closeAll())
  app.get('/oauth/revocations/stream', async (request, reply) => {
    // HTTP Basic only: a GET has no body, and credentials never go in a URL.
    const client = await clients.authenticate(extractClientCredentials({}, request.headers.authorization))
    if (!client.isResourceServer) {
      throw new ResourceServerOnlyError('Only applications an operator marked as resource servers may subscribe to revocations')
    }
    // Refused with JSON before the stream starts; nothing awaits between this check and
    // `open`, so concurrent subscriptions cannot both take the last slot.
    const refusal = feed.refusal(client)
    if (refusal) throw refusalError(refusal)
    reply.hijack()
    streams.open(reply.raw, client)
  })
}
