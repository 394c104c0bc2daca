import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { render } from '../../render.js'
import loginRoutes from './login.js'
import logoutRoutes from './logout.js'
import securityLogRoutes from './security-log.js'
import signupRoutes from './signup.js'

export default async function accountRoutes(app: FastifyInstance, deps: Services) {
  app.get('/', async (request, reply) => {
    if (request.user) return reply.redirect('/applications', 303)
    return render(request, reply, 'home.eta', { title: deps.config.serviceName })
  })
  await app.register(signupRoutes, deps)
  await app.register(loginRoutes, deps)
  await app.register(logoutRoutes, deps)
  await app.register(securityLogRoutes, deps)
}
