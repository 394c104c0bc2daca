import type { FastifyInstance } from 'fastify'
import type { Services } from '../../services.js'

export default async function healthRoutes(app: FastifyInstance, deps: Services) {
  app.get('/healthz', async () => ({ status: 'ok' }))
  app.get('/readyz', async (request, reply) => {
    try {
      await deps.database.query('select 1', [])
      return { status: 'ok', database: 'ok' }
    } catch (err) {
      request.log.warn({ err }, 'readiness check: database unreachable')
      return reply.code(503).send({ status: 'unavailable', database: 'unreachable' })
    }
  })
}
