import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { SlowDownError, TemporarilyUnavailableError } from '../../../oauth/index.js'
import type { StreamRefusal } from '../../../revocation/index.js'
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
  { resource, revocationFeed }: Pick<Services, 'resource' | 'revocationFeed'>,
): Promise<void> {
  const streams = new RevocationEventStreams(revocationFeed)
  app.addHook('preClose', async () => streams.closeAll())
  app.get('/oauth/revocations/stream', { config: { streamed: true } }, async (request, reply) => {
    const client = await resource.authenticateSubscriber(request.headers.authorization)
    // Refused with JSON before the stream starts; nothing awaits between this check and
    // `open`, so concurrent subscriptions cannot both take the last slot.
    const refusal = resource.streamRefusal(client)
    if (refusal) throw refusalError(refusal)
    reply.hijack()
    streams.open(reply.raw, client)
  })
}
