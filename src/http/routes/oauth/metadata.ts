import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'

/** GET /.well-known/oauth-authorization-server (RFC 8414 3): the metadata built once in the use cases. */
export default async function metadataRoutes(app: FastifyInstance, { oauth }: Services): Promise<void> {
  const metadata = oauth.metadata()
  app.get('/.well-known/oauth-authorization-server', async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=3600').send(metadata),
  )
}
