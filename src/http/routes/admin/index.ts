import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Services } from '../../../services.js'
import adminApplicationRoutes from './applications.js'
import adminAuditRoutes from './audit.js'
import adminUserRoutes from './users.js'
import { dashboardView } from './dashboard.js'
import { requireRecentAuth } from '../../recent-auth.js'
import { render } from '../../render.js'

/**
 * /admin, the operator's pages (docs/operating/admin.md). For anyone who is not an
 * operator, logged in or not, every address here answers the same 404 as an address that does
 * not exist: the pages' existence is not advertised. Registered inside the pages context
 * (session, CSRF, same-origin POSTs, HTML errors); every action has a confirmation page whose
 * form posts it.
 */
export default async function adminRoutes(pages: FastifyInstance, deps: Services): Promise<void> {
  const operatorOnly = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!request.user?.is_operator) return reply.callNotFound()
  }
  // Every action, now and to come, in "sudo mode" (src/http/recent-auth.ts). Each action posts
  // to the address of its own confirmation page, so a refused POST comes back to that page (the
  // same-origin check has run before, in onRequest; the route's CSRF check after).
  const recentForActions = requireRecentAuth(deps, (request) => request.url)
  const recentForEveryAction = async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return recentForActions(request, reply)
  }
  await pages.register(async function adminPages(app) {
    // The second-factor policy's area (src/http/second-factor-gate.ts) is the group's, not the URL's.
    app.addHook('onRoute', (route) => {
      route.config = { secondFactorArea: 'admin', ...route.config }
    })
    app.addHook('preHandler', operatorOnly)
    app.addHook('preHandler', recentForEveryAction)

    // The dashboard: the last 24 hours and 7 days, counted by the operator's use case.
    app.get('/admin', async (request, reply) =>
      render(request, reply, 'admin/index.eta', { title: 'Operator', ...dashboardView(await deps.operator.activity()) }),
    )

    for (const routes of [adminUserRoutes, adminApplicationRoutes, adminAuditRoutes]) await routes(app, deps)
  })
}
