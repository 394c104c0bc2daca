import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import type { Services } from '../../services.js'

export default async function healthRoutes(app: FastifyInstance, deps: Services) {
  app.get('/healthz', async () => ({ status: 'ok' }))
  app.get('/readyz', async (request, reply) => {
    try {
      await sql`select 1`.execute(deps.database.db)
      return { status: 'ok', database: 'ok' }
    } catch (err) {
      request.log.warn({ err }, 'readiness check: database unreachable')
      return reply.code(503).send({ status: 'unavailable', database: 'unreachable' })
    }
  })
}
