import type { FastifyInstance } from 'fastify'
import { endSession } from '../../../accounts/sessions.js'
import type { Services } from '../../../services.js'
import { SESSION_COOKIE, clearSessionCookie } from '../../session.js'

export default async function logoutRoutes(app: FastifyInstance, deps: Services) {
  app.post('/logout', { preHandler: app.csrfProtection }, async (request, reply) => {
    const id = request.cookies[SESSION_COOKIE]
    if (id) await endSession(deps.database.db, id)
    clearSessionCookie(reply, deps)
    return reply.redirect('/login', 303)
  })
}
