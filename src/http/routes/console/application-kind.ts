import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { type Application, parseKindChoice } from '../../../applications/index.js'
import type { Services } from '../../../services.js'
import { requireRecentAuth } from '../../recent-auth.js'
import { render } from '../../render.js'
import { renderApplicationPage } from './application.js'
import { ownerOf } from './owner.js'
import { KIND_LABELS } from './view-models.js'

type IdParams = { Params: { id: string } }

// Sudo mode (src/http/recent-auth.ts), as for a new secret: the change may delete or create one.
const confirmationPage = (request: FastifyRequest<IdParams>) => `/applications/${encodeURIComponent(request.params.id)}/kind`

function kindPage(request: FastifyRequest, reply: FastifyReply, application: Application, error?: string) {
  const choices = (Object.keys(KIND_LABELS) as Array<Application['kind']>).filter((k) => k !== application.kind)
  return render(
    request,
    reply,
    'console/applications/kind.eta',
    {
      title: `Change the kind of ${application.name}`,
      app: {
        id: application.id,
        name: application.name,
        kindLabel: KIND_LABELS[application.kind],
        isPublic: application.secret_hash === null,
      },
      choices: choices.map((value, i) => ({ value, label: KIND_LABELS[value], checked: i === 0 })),
      error: error ?? null,
    },
    error === undefined ? 200 : 400,
  )
}

/**
 * GET /applications/:id/kind (the choice, with what each change does), POST /applications/:id/kind:
 * web, native, single-page or machine (docs/applications.md "Which kind of application?"). A new
 * secret, when the change makes one, is shown once on the page this POST answers.
 */
export default async function applicationKindRoutes(app: FastifyInstance, deps: Services) {
  const recent = requireRecentAuth(deps, (request) => confirmationPage(request as FastifyRequest<IdParams>))
  app.get<IdParams>('/applications/:id/kind', { preHandler: recent }, async (request, reply) => {
    const application = await deps.console.findApplication(ownerOf(request), request.params.id)
    if (!application) return reply.callNotFound()
    return kindPage(request, reply, application)
  })

  app.post<IdParams & { Body: unknown }>('/applications/:id/kind', { preHandler: [app.csrfProtection, recent] }, async (request, reply) => {
    const owner = ownerOf(request)
    const application = await deps.console.findApplication(owner, request.params.id)
    if (!application) return reply.callNotFound()
    const kind = parseKindChoice(request.body)
    if (kind === undefined) return kindPage(request, reply, application, 'Choose web application, native app, single-page app or machine.')
    const result = await deps.console.changeKind(owner, application.id, kind)
    if (!result) return reply.callNotFound()
    if (result.kind === 'refused') return kindPage(request, reply, application, result.reason)
    return renderApplicationPage(request, reply, deps.config.publicUrl, result.application, deps.scopes, {
      ...(result.clientSecret === null ? {} : { clientSecret: result.clientSecret, secretEvent: 'created' as const }),
      notice: `Kind changed to ${KIND_LABELS[kind].toLowerCase()}.`,
    })
  })
}
