import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Services } from '../../../services.js'
import { requireRecentAuth } from '../../recent-auth.js'
import { render } from '../../render.js'
import { renderApplicationPage } from './application.js'
import { ownerOf } from './owner.js'

type IdParams = { Params: { id: string } }

// Sudo mode (src/http/recent-auth.ts): a refused POST comes back to this confirmation page.
const confirmationPage = (request: FastifyRequest<IdParams>) => `/applications/${encodeURIComponent(request.params.id)}/secret`

/**
 * GET /applications/:id/secret (confirmation), POST /applications/:id/secret: a new client
 * secret, shown once. The old one fails at once, which breaks a deployed client until it is
 * given the new one; hence the confirmation page (the console has no JavaScript for a dialog).
 */
export default async function applicationSecretRoutes(app: FastifyInstance, deps: Services) {
  const recent = requireRecentAuth(deps, (request) => confirmationPage(request as FastifyRequest<IdParams>))
  app.get<IdParams>('/applications/:id/secret', { preHandler: recent }, async (request, reply) => {
    const application = await deps.console.findApplication(ownerOf(request), request.params.id)
    // A public application (native, single-page) has no secret to replace (docs/applications.md).
    if (!application || application.secret_hash === null) return reply.callNotFound()
    return render(request, reply, 'console/applications/regenerate.eta', {
      title: `New secret for ${application.name}`,
      app: { id: application.id, name: application.name },
    })
  })

  app.post<IdParams>('/applications/:id/secret', { preHandler: [app.csrfProtection, recent] }, async (request, reply) => {
    const result = await deps.console.regenerateSecret(ownerOf(request), request.params.id)
    if (!result) return reply.callNotFound()
    // Rendered from this response rather than redirected, for the reasons given at
    // POST /applications: the plaintext must not outlive this page.
    return renderApplicationPage(request, reply, deps.config.publicUrl, result.application, deps.scopes, {
      clientSecret: result.clientSecret,
      secretEvent: 'regenerated',
    })
  })
}
