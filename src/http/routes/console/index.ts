import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { requireUser } from '../../session.js'
import { addRoutes, routeScope } from '../plugin-contexts.js'
import applicationDeleteRoutes from './application-delete.js'
import applicationSecretRoutes from './application-secret.js'
import applicationRoutes from './application.js'
import applicationsRoutes from './applications.js'

/**
 * "Your Applications" (docs/architecture.md, "Where things live"). Registered inside the pages context, which
 * provides the session, CSRF and HTML error pages; everything here needs a logged-in user.
 * The scope's preHandler runs before each route's own, csrfProtection among them, so a logged-out POST
 * goes to the log-in page rather than to a CSRF error.
 */
export default async function consoleRoutes(app: FastifyInstance, deps: Services) {
  await addRoutes(
    // Registering and managing applications: the second-factor policy's `applications` area (src/http/second-factor-gate.ts).
    routeScope(app, { preHandler: [requireUser], config: { secondFactorArea: 'applications' } }),
    deps,
    applicationsRoutes,
    applicationRoutes,
    applicationSecretRoutes,
    applicationDeleteRoutes,
  )
}
