import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { render } from '../../render.js'
import emailLinkRoutes from './email-links.js'
import forgotPasswordRoutes from './forgot-password.js'
import loginRoutes from './login.js'
import logoutRoutes from './logout.js'
import passkeyRoutes from './passkeys.js'
import reauthRoutes from './reauth.js'
import secondFactorStepRoutes from './second-factor.js'
import securityLogRoutes from './security-log.js'
import settingsRoutes from './settings.js'
import signupRoutes from './signup.js'
import secondFactorRoutes from './second-factor-settings.js'

export default async function accountRoutes(app: FastifyInstance, deps: Services) {
  app.get<{ Querystring: { account_deleted?: string } }>('/', async (request, reply) => {
    if (request.user) return reply.redirect('/applications', 303)
    return render(request, reply, 'home.eta', { title: deps.config.serviceName, accountDeleted: request.query.account_deleted === '1' })
  })
  for (const routes of [
    signupRoutes,
    loginRoutes,
    secondFactorStepRoutes,
    logoutRoutes,
    securityLogRoutes,
    forgotPasswordRoutes,
    emailLinkRoutes,
    settingsRoutes,
    passkeyRoutes,
    reauthRoutes,
    secondFactorRoutes,
  ])
    await routes(app, deps)
}
