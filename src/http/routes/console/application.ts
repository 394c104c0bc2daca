import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { type Application, applicationFormValues, parseApplicationForm } from '../../../applications/index.js'
import type { ScopeVocabulary } from '../../../oauth/index.js'
import type { Services } from '../../../services.js'
import { allowCopyScript } from '../../page-security.js'
import { render } from '../../render.js'
import { ownerOf } from './owner.js'
import { applicationFormView, applicationView } from './view-models.js'

type IdParams = { Params: { id: string } }

const UPDATED_NOTICES: Record<string, string | undefined> = {
  '1': 'Application updated.',
  unverified:
    'Application updated. Its name, redirect URIs or links changed, so it is no longer verified: it needs verifying again by the operator.',
}

/**
 * The application page. `clientSecret` is set only on the response to the request that created
 * or regenerated it: the one time the plaintext exists outside the owner's hands. The copy
 * buttons' script may run here (allowCopyScript); the page works without it.
 */
export function renderApplicationPage(
  request: FastifyRequest,
  reply: FastifyReply,
  publicUrl: string,
  application: Application,
  vocabulary: ScopeVocabulary,
  options: { clientSecret?: string; secretEvent?: 'created' | 'regenerated'; notice?: string | undefined } = {},
): Promise<FastifyReply> {
  allowCopyScript(reply, publicUrl)
  return render(request, reply, 'console/applications/show.eta', {
    copyScript: true,
    title: application.name,
    app: applicationView(application, vocabulary),
    clientSecret: options.clientSecret ?? null,
    secretEvent: options.secretEvent ?? null,
    notice: options.notice ?? null,
  })
}

/** GET /applications/:id, GET /applications/:id/edit, POST /applications/:id (update). */
export default async function applicationRoutes(app: FastifyInstance, deps: Services) {
  app.get<IdParams & { Querystring: { updated?: string } }>('/applications/:id', async (request, reply) => {
    const application = await deps.console.findApplication(ownerOf(request), request.params.id)
    if (!application) return reply.callNotFound()
    return renderApplicationPage(request, reply, deps.config.publicUrl, application, deps.scopes, {
      notice: UPDATED_NOTICES[request.query.updated ?? ''],
    })
  })

  app.get<IdParams>('/applications/:id/edit', async (request, reply) => {
    const application = await deps.console.findApplication(ownerOf(request), request.params.id)
    if (!application) return reply.callNotFound()
    const mode = { kind: 'edit', id: application.id, name: application.name } as const
    return render(
      request,
      reply,
      'console/applications/form.eta',
      applicationFormView(mode, applicationFormValues(application), deps.scopes),
    )
  })

  app.post<IdParams & { Body: Record<string, unknown> }>(
    '/applications/:id',
    { preHandler: app.csrfProtection },
    async (request, reply) => {
      const owner = ownerOf(request)
      const existing = await deps.console.findApplication(owner, request.params.id)
      if (!existing) return reply.callNotFound()
      const form = parseApplicationForm(request.body, deps.scopes, existing.kind)
      if (!form.ok) {
        const mode = { kind: 'edit', id: existing.id, name: existing.name } as const
        return render(
          request,
          reply,
          'console/applications/form.eta',
          applicationFormView(mode, form.values, deps.scopes, form.errors),
          400,
        )
      }
      const updated = await deps.console.updateApplication(owner, existing, form.settings)
      if (!updated) return reply.callNotFound()
      return reply.redirect(`/applications/${updated.application.id}?updated=${updated.verificationCleared ? 'unverified' : '1'}`, 303)
    },
  )
}
