import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { actorOf } from '../../audit.js'
import { rotateCsrfSecret } from '../../page-security.js'
import { clearSessionCookie, sessionIdOf } from '../../session.js'

export default async function logoutRoutes(app: FastifyInstance, deps: Services) {
  app.post('/logout', { preHandler: app.csrfProtection }, async (request, reply) => {
    const id = sessionIdOf(request, deps)
    if (id) await deps.accounts.logOut(actorOf(request), id)
    clearSessionCookie(reply, deps)
    // Forms of the logged-in pages (and their tokens) stop working with the session they
    // belonged to (OWASP Session Management Cheat Sheet).
    rotateCsrfSecret(request, reply, deps)
    return reply.redirect('/login', 303)
  })
}
