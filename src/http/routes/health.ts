import type { FastifyInstance } from 'fastify'
import { RETRY_AFTER_SECONDS } from '../../db/index.js'
import type { Services } from '../../services.js'

/**
 * /healthz: the process can serve (a supervisor restarts it otherwise). /readyz: it can serve
 * what needs the database, asked afresh on every call through the probes, so it says 200 as soon
 * as the database is back (docs/operating/backups-and-upgrades.md "Failures and recovery"). A failing /readyz is not logged per
 * call: the outage is, once, by the database's availability.
 */
export default async function healthRoutes(app: FastifyInstance, deps: Pick<Services, 'probes'>) {
  const { probes } = deps
  app.get('/healthz', async () => ({ status: 'ok' }))
  app.get('/readyz', async (_request, reply) => {
    reply.header('cache-control', 'no-store')
    if (await probes.databaseReachable()) return { status: 'ok', database: 'ok' }
    return reply.code(503).header('retry-after', String(RETRY_AFTER_SECONDS)).send({ status: 'unavailable', database: 'unreachable' })
  })
}
