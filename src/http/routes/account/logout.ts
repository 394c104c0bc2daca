import type { FastifyInstance } from 'fastify'
import { logOut } from '../../../accounts/sessions.js'
import type { Services } from '../../../services.js'
import { auditTrail } from '../../audit.js'
import { rotateCsrfSecret } from '../../page-security.js'
import { clearSessionCookie, sessionIdOf } from '../../session.js'

export default async function logoutRoutes(app: FastifyInstance, deps: Services) {
  app.post('/logout', { preHandler: app.csrfProtection }, async (request, reply) => {
    const id = sessionIdOf(request, deps)
    if (id) await logOut(deps.database.db, id, request.user?.id ?? null, auditTrail(request, deps))
    clearSessionCookie(reply, deps)
    // Forms of the logged-in pages (and their tokens) stop working with the session they
    // belonged to (OWASP Session Management Cheat Sheet).
    rotateCsrfSecret(request, reply, deps)
    return reply.redirect('/login', 303)
  })
}
