import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { requireUser } from '../../session.js'
import applicationDeleteRoutes from './application-delete.js'
import applicationKindRoutes from './application-kind.js'
import applicationSecretRoutes from './application-secret.js'
import applicationTokensRoutes from './application-tokens.js'
import applicationRoutes from './application.js'
import applicationsRoutes from './applications.js'

/**
 * "Your Applications" (docs/architecture.md, "Where things live"). Registered inside the pages context, which
 * provides the session, CSRF and HTML error pages; everything here needs a logged-in user.
 * A plugin of its own (Fastify encapsulation): its preHandler hook runs before each route's own,
 * csrfProtection among them, so a logged-out POST goes to the log-in page rather than to a CSRF
 * error; and its routes are the second-factor policy's `applications` area (src/http/second-factor-gate.ts).
 */
export default async function consoleRoutes(pages: FastifyInstance, deps: Services) {
  await pages.register(async function consolePages(app) {
    app.addHook('onRoute', (route) => {
      route.config = { secondFactorArea: 'applications', ...route.config }
    })
    app.addHook('preHandler', requireUser)
    for (const routes of [
      applicationsRoutes,
      applicationRoutes,
      applicationSecretRoutes,
      applicationKindRoutes,
      applicationTokensRoutes,
      applicationDeleteRoutes,
    ])
      await routes(app, deps)
  })
}
