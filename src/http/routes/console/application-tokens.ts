import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  ACCESS_LIFETIMES,
  type Application,
  REFRESH_LIFETIMES,
  type TokenPolicyFormValues,
  describeTokenPolicy,
  formatLifetime,
  parseTokenPolicyChoice,
  tokenPolicyFormValues,
  tokenPolicyOf,
} from '../../../applications/index.js'
import type { Services } from '../../../services.js'
import { requireRecentAuth } from '../../recent-auth.js'
import { render } from '../../render.js'
import { renderApplicationPage } from './application.js'
import { ownerOf } from './owner.js'
import { KIND_LABELS } from './view-models.js'

type IdParams = { Params: { id: string } }

// Sudo mode (src/http/recent-auth.ts), as for the kind: weakening the policy is what a stolen session would do.
const confirmationPage = (request: FastifyRequest<IdParams>) => `/applications/${encodeURIComponent(request.params.id)}/tokens`

const options = (presets: Readonly<Record<string, number>>, chosen: string) =>
  Object.entries(presets).map(([value, seconds]) => ({ value, label: formatLifetime(seconds), selected: value === chosen }))

function tokensPage(
  request: FastifyRequest,
  reply: FastifyReply,
  application: Application,
  form?: { values: TokenPolicyFormValues; error: string },
) {
  const values = form?.values ?? tokenPolicyFormValues(tokenPolicyOf(application))
  return render(
    request,
    reply,
    'console/applications/tokens.eta',
    {
      title: `Token policy of ${application.name}`,
      app: {
        id: application.id,
        name: application.name,
        kindLabel: KIND_LABELS[application.kind],
        machine: application.kind === 'machine',
        isPublic: application.secret_hash === null,
      },
      current: describeTokenPolicy(tokenPolicyOf(application), application.kind),
      values,
      accessOptions: options(ACCESS_LIFETIMES, values.accessLifetime),
      refreshOptions: options(REFRESH_LIFETIMES, values.refreshLifetime),
      error: form?.error ?? null,
    },
    form === undefined ? 200 : 400,
  )
}

/**
 * GET /applications/:id/tokens (the choice, with what each change does to clients and to tokens
 * already issued), POST /applications/:id/tokens: DPoP optional or required, tokens valid until
 * revoked or expiring with rotating refresh tokens (docs/applications.md "Token policy").
 */
export default async function applicationTokensRoutes(app: FastifyInstance, deps: Services) {
  const recent = requireRecentAuth(deps, (request) => confirmationPage(request as FastifyRequest<IdParams>))
  app.get<IdParams>('/applications/:id/tokens', { preHandler: recent }, async (request, reply) => {
    const application = await deps.console.findApplication(ownerOf(request), request.params.id)
    if (!application) return reply.callNotFound()
    return tokensPage(request, reply, application)
  })

  app.post<IdParams & { Body: unknown }>(
    '/applications/:id/tokens',
    { preHandler: [app.csrfProtection, recent] },
    async (request, reply) => {
      const owner = ownerOf(request)
      const application = await deps.console.findApplication(owner, request.params.id)
      if (!application) return reply.callNotFound()
      const choice = parseTokenPolicyChoice(request.body, application.kind)
      if (!choice.ok) return tokensPage(request, reply, application, choice)
      const result = await deps.console.changeTokenPolicy(owner, application.id, choice.policy)
      if (!result) return reply.callNotFound()
      const words = describeTokenPolicy(tokenPolicyOf(result.application), result.application.kind)
      return renderApplicationPage(request, reply, deps.config.publicUrl, result.application, deps.scopes, {
        notice: result.kind === 'changed' ? `Token policy changed: ${words.brief}.` : `Token policy unchanged: ${words.brief}.`,
      })
    },
  )
}
