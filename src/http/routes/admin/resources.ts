import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { canonicalIdentifier } from '../../../oauth/index.js'
import { RefusedError } from '../../../operator/index.js'
import type { Services } from '../../../services.js'
import { actorOf } from '../../audit.js'
import { requireRecentAuth } from '../../recent-auth.js'
import { render } from '../../render.js'

/*
 * /admin/applications/:id/resources: the operator declares a resource server's resource
 * identifiers (RFC 8707 §2) and the lifetime of tokens minted for them (docs/operating/admin.md
 * "Resource identifiers", docs/decisions/025-audiences.md). Confirmed recently, as every admin
 * action; the form sends the whole list, one identifier per line, and works without scripts.
 */

type Params = { Params: { id: string } }
type Body = { identifiers?: unknown; ttl?: unknown }

/** The most lines the form takes: far more than one API has names. */
const MAX_LINES = 100

export default async function resourceRoutes(app: FastifyInstance, deps: Services): Promise<void> {
  const path = '/admin/applications/:id/resources'
  app.get<Params>(path, { preHandler: requireRecentAuth(deps) }, async (request, reply) => {
    const a = await deps.operator.applicationById(request.params.id)
    if (!a) return reply.callNotFound()
    const view = await deps.operator.resourcesOf(a.id)
    return page(request, reply, a, {
      identifiers: view.identifiers.join('\n'),
      ttl: view.ttlSeconds === null ? '' : String(view.ttlSeconds),
      resourceServer: view.resourceServer,
    })
  })

  app.post<Params & { Body: Body }>(path, { preHandler: app.csrfProtection }, async (request, reply) => {
    const a = await deps.operator.applicationById(request.params.id)
    if (!a) return reply.callNotFound()
    const body = (request.body ?? {}) as Body
    const typed = typeof body.identifiers === 'string' ? body.identifiers : ''
    const ttlTyped = typeof body.ttl === 'string' ? body.ttl.trim() : ''
    const form = { identifiers: typed, ttl: ttlTyped, resourceServer: a.is_resource_server }
    const lines = typed
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l !== '')
    if (lines.length > MAX_LINES) return page(request, reply, a, form, `At most ${MAX_LINES} identifiers.`, 400)
    if (ttlTyped !== '' && !/^\d{1,9}$/.test(ttlTyped)) {
      return page(request, reply, a, form, 'The token lifetime is a number of seconds, or empty for the default.', 400)
    }
    const before = (await deps.operator.resourcesOf(a.id)).identifiers
    // Compared as declared: `https://API.example.com` is the `https://api.example.com/` already there.
    const wanted = lines.map(canonicalIdentifier)
    try {
      await deps.operator.changeResources(actorOf(request), a.id, {
        add: lines.filter((l) => !before.includes(canonicalIdentifier(l))),
        remove: before.filter((l) => !wanted.includes(l)),
        ttlSeconds: ttlTyped === '' ? null : Number(ttlTyped),
      })
    } catch (err) {
      if (!(err instanceof RefusedError)) throw err
      return page(request, reply, a, form, err.message, 400)
    }
    return reply.redirect(`/admin/applications/${a.id}?done=resources`, 303)
  })
}

function page(
  request: FastifyRequest,
  reply: FastifyReply,
  a: { id: string; name: string },
  form: { identifiers: string; ttl: string; resourceServer: boolean },
  error?: string,
  status = 200,
) {
  return render(
    request,
    reply,
    'admin/resources.eta',
    {
      title: `Resource identifiers of ${a.name}`,
      name: a.name,
      ...form,
      error,
      action: `/admin/applications/${a.id}/resources`,
      cancel: `/admin/applications/${a.id}`,
    },
    status,
  )
}
