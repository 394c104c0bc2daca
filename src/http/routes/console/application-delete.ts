import type { FastifyInstance } from 'fastify'
import { deleteApplication, findApplication } from '../../../console/applications.js'
import type { Services } from '../../../services.js'
import { auditTrail } from '../../audit.js'
import { render } from '../../render.js'
import { ownerId } from './owner.js'

type IdParams = { Params: { id: string } }

/** GET /applications/:id/delete (confirmation), POST /applications/:id/delete. */
export default async function applicationDeleteRoutes(app: FastifyInstance, deps: Services) {
  const { db } = deps.database

  app.get<IdParams>('/applications/:id/delete', async (request, reply) => {
    const application = await findApplication(db, request.params.id, ownerId(request))
    if (!application) return reply.callNotFound()
    return render(request, reply, 'console/applications/delete.eta', {
      title: `Delete ${application.name}`,
      app: { id: application.id, name: application.name },
    })
  })

  app.post<IdParams>('/applications/:id/delete', { preHandler: app.csrfProtection }, async (request, reply) => {
    const deleted = await deleteApplication(db, deps.bus, request.params.id, ownerId(request), deps.clock(), auditTrail(request, deps))
    if (!deleted) return reply.callNotFound()
    return reply.redirect('/applications?deleted=1', 303)
  })
}
