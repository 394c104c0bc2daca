import type { FastifyInstance } from 'fastify'
import { formatLifetime } from '../../../applications/index.js'
import type { Services } from '../../../services.js'
import { actorOf } from '../../audit.js'
import { render } from '../../render.js'
import { requireUser } from '../../session.js'

/** "Authorized Applications": the user's grants, and "Revoke access" for each. */
export default async function authorizedApplicationsRoutes(app: FastifyInstance, { oauth, scopes }: Services): Promise<void> {
  app.get<{ Querystring: { revoked?: string } }>('/authorized-applications', { preHandler: requireUser }, async (request, reply) => {
    const grants = await oauth.listAuthorizedApplications(request.user!.id)
    return render(request, reply, 'oauth/authorized-applications.eta', {
      title: 'Authorized Applications',
      revoked: request.query.revoked === '1',
      grants: grants.map((g) => ({
        id: g.id,
        name: g.application_name,
        ownerEmail: g.owner_email,
        // A client of a metadata document has no owner: the host of its document is all that is known (docs/agents.md).
        documentHost: g.metadata_fetched_at === null ? null : hostOf(g.client_id),
        // A scope the scopes file no longer defines grants nothing (docs/operating/scopes.md): not shown.
        scopes: scopes.normalize(g.scopes).map((s) => ({ name: s, description: scopes.describe(s) })),
        grantedOn: g.created_at.toISOString().slice(0, 10),
        updatedOn: g.updated_at.toISOString().slice(0, 10),
        // Expiring tokens with rotating refresh tokens (docs/expiring-tokens.md); null: valid until revoked.
        expiry:
          g.refresh_access_ttl_seconds === null || g.refresh_until === null
            ? null
            : {
                access: formatLifetime(g.refresh_access_ttl_seconds),
                until: g.refresh_until.toISOString().slice(0, 10),
                untilIso: g.refresh_until.toISOString(),
              },
      })),
    })
  })

  // Revokes every token of this user for the application and forgets the consent, so the
  // next authorization asks again.
  app.post<{ Params: { grantId: string } }>(
    '/authorized-applications/:grantId/revoke',
    { preHandler: [app.csrfProtection, requireUser] },
    async (request, reply) => {
      await oauth.revokeAccess({ ...actorOf(request), userId: request.user!.id }, request.params.grantId)
      // A grant already gone (double submit, another tab) is the outcome the user asked for.
      return reply.redirect('/authorized-applications?revoked=1', 303)
    },
  )
}

function hostOf(url: string): string {
  return URL.canParse(url) ? new URL(url).host : url
}
