import { IDENTITY_SCOPES } from '@gatehouse/verifier/shared'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { RefusedError } from '../../../operator/index.js'
import type { Services } from '../../../services.js'
import { actorOf } from '../../audit.js'
import { requireRecentAuth } from '../../recent-auth.js'
import { render } from '../../render.js'

/*
 * /admin/applications/:id/client-credentials: the operator enables the client credentials grant
 * (RFC 6749 §4.4) of a machine application, chooses its scopes, or turns it off
 * (docs/operating/admin.md "Machine clients", docs/decisions/021-machine-tokens.md). Confirmed
 * recently, as every admin action; the console has no such form.
 */

type Params = { Params: { id: string } }
type Body = { scopes?: unknown; off?: unknown }

export default async function clientCredentialsRoutes(app: FastifyInstance, deps: Services): Promise<void> {
  const path = '/admin/applications/:id/client-credentials'
  app.get<Params>(path, { preHandler: requireRecentAuth(deps) }, async (request, reply) => {
    const a = await deps.operator.applicationById(request.params.id)
    if (!a) return reply.callNotFound()
    return page(deps, request, reply, a, a.client_credentials_scopes ?? [])
  })

  app.post<Params & { Body: Body }>(path, { preHandler: app.csrfProtection }, async (request, reply) => {
    const a = await deps.operator.applicationById(request.params.id)
    if (!a) return reply.callNotFound()
    const body = (request.body ?? {}) as Body
    const off = body.off !== undefined
    const asked = [body.scopes].flat().filter((s): s is string => typeof s === 'string')
    try {
      await deps.operator.setClientCredentials(actorOf(request), a.id, off ? null : asked.join(' '))
    } catch (err) {
      if (!(err instanceof RefusedError)) throw err
      return page(deps, request, reply, a, asked, err.message, 400)
    }
    return reply.redirect(`/admin/applications/${a.id}?done=client-credentials`, 303)
  })
}

function page(
  deps: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  a: { id: string; name: string; kind: string; client_credentials_scopes: string[] | null },
  checked: readonly string[],
  error?: string,
  status = 200,
) {
  const scopes = deps.scopes.entries
    // OpenID Connect's scopes describe a user; a machine token has none, so they are not offered.
    .filter((e) => !IDENTITY_SCOPES.includes(e.name))
    .map((e) => ({ value: e.name, description: e.description, checked: checked.includes(e.name) }))
  return render(
    request,
    reply,
    'admin/client-credentials.eta',
    {
      title: `Client credentials for ${a.name}`,
      name: a.name,
      machine: a.kind === 'machine',
      enabled: a.client_credentials_scopes !== null,
      scopes,
      error,
      action: `/admin/applications/${a.id}/client-credentials`,
      cancel: `/admin/applications/${a.id}`,
    },
    status,
  )
}
