import type { FastifyInstance } from 'fastify'
import { SCOPE_DESCRIPTIONS, isScope, normalizeScopes } from '../../../oauth/scope.js'
import type { Services } from '../../../services.js'
import { auditTrail } from '../../audit.js'
import { render } from '../../render.js'
import { requireUser } from '../../session.js'
import { listAuthorizedApplications, revokeAccess } from '../../../accounts/authorized-applications.js'

/** "Authorized Applications": the user's grants, and "Revoke access" for each. */
export default async function authorizedApplicationsRoutes(app: FastifyInstance, deps: Services): Promise<void> {
  const { db } = deps.database

  app.get<{ Querystring: { revoked?: string } }>('/authorized-applications', { preHandler: requireUser }, async (request, reply) => {
    const grants = await listAuthorizedApplications(db, request.user!.id)
    return render(request, reply, 'oauth/authorized-applications.eta', {
      title: 'Authorized Applications',
      revoked: request.query.revoked === '1',
      grants: grants.map((g) => ({
        id: g.id,
        name: g.application_name,
        ownerEmail: g.owner_email,
        scopes: normalizeScopes(g.scopes)
          .filter(isScope)
          .map((s) => ({ name: s, description: SCOPE_DESCRIPTIONS[s] })),
        grantedOn: g.created_at.toISOString().slice(0, 10),
        updatedOn: g.updated_at.toISOString().slice(0, 10),
      })),
    })
  })

  // Revokes every token of this user for the application and forgets the consent, so the
  // next authorization asks again.
  app.post<{ Params: { grantId: string } }>(
    '/authorized-applications/:grantId/revoke',
    { preHandler: [app.csrfProtection, requireUser] },
    async (request, reply) => {
      await revokeAccess({ db, bus: deps.bus }, request.user!.id, request.params.grantId, deps.clock(), auditTrail(request, deps))
      // A grant already gone (double submit, another tab) is the outcome the user asked for.
      return reply.redirect('/authorized-applications?revoked=1', 303)
    },
  )
}
