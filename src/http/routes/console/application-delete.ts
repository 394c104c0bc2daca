import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Services } from '../../../services.js'
import { requireRecentAuth } from '../../recent-auth.js'
import { render } from '../../render.js'
import { ownerOf } from './owner.js'

type IdParams = { Params: { id: string } }

// Sudo mode (src/http/recent-auth.ts): a refused POST comes back to this confirmation page.
const confirmationPage = (request: FastifyRequest<IdParams>) => `/applications/${encodeURIComponent(request.params.id)}/delete`

/** GET /applications/:id/delete (confirmation), POST /applications/:id/delete. */
export default async function applicationDeleteRoutes(app: FastifyInstance, deps: Services) {
  const recent = requireRecentAuth(deps, (request) => confirmationPage(request as FastifyRequest<IdParams>))
  app.get<IdParams>('/applications/:id/delete', { preHandler: recent }, async (request, reply) => {
    const application = await deps.console.findApplication(ownerOf(request), request.params.id)
    if (!application) return reply.callNotFound()
    return render(request, reply, 'console/applications/delete.eta', {
      title: `Delete ${application.name}`,
      app: { id: application.id, name: application.name },
    })
  })

  app.post<IdParams>('/applications/:id/delete', { preHandler: [app.csrfProtection, recent] }, async (request, reply) => {
    const deleted = await deps.console.deleteApplication(ownerOf(request), request.params.id)
    if (!deleted) return reply.callNotFound()
    return reply.redirect('/applications?deleted=1', 303)
  })
}
