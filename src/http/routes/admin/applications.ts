import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { describeTokenPolicy, tokenPolicyOf } from '../../../applications/index.js'
import type { Actor } from '../../../audit/index.js'
import { type OperatorUseCases, RefusedError } from '../../../operator/index.js'
import type { Services } from '../../../services.js'
import { actorOf } from '../../audit.js'
import { requireRecentAuth } from '../../recent-auth.js'
import { render } from '../../render.js'
import { KIND_LABELS, formatTime } from '../console/view-models.js'
import { listRequest, listView } from './query.js'
import clientCredentialsRoutes from './client-credentials.js'
import resourceRoutes from './resources.js'

type AppParams = { Params: { id: string } }

interface ActionSpec {
  verb: string
  explain: (serviceName: string) => string
  button: string
  danger: boolean
  /** The notice on the application's page afterwards; absent for deletion, which leaves it. */
  done?: string
  run(operator: OperatorUseCases, actor: Actor, id: string): Promise<unknown>
}

const ACTIONS: Record<string, ActionSpec> = {
  suspend: {
    verb: 'Suspend',
    explain: () =>
      'Its access tokens are revoked and its pending codes deleted at once, resource servers are told, and it can no longer authorize users or obtain tokens. Its owner sees that it is suspended.',
    button: 'Suspend application',
    danger: true,
    done: 'The application is suspended.',
    run: (operator, actor, id) => operator.suspendApplication(actor, id),
  },
  unsuspend: {
    verb: 'Unsuspend',
    explain: () => 'It may authorize users and obtain tokens again. The tokens revoked by the suspension stay revoked.',
    button: 'Unsuspend application',
    danger: false,
    done: 'The application is active again.',
    run: (operator, actor, id) => operator.unsuspendApplication(actor, id),
  },
  verify: {
    verb: 'Verify',
    explain: (service) =>
      `Its consent page will say "Verified by ${service}", and error responses for it are sent back to its redirect URIs automatically. Verify only an application whose owner you know.`,
    button: 'Verify application',
    danger: false,
    done: 'The application is verified.',
    run: (operator, actor, id) => operator.setVerified(actor, id, true),
  },
  unverify: {
    verb: 'Remove verification from',
    explain: (service) => `Its consent page will say that ${service} has not verified it.`,
    button: 'Remove verification',
    danger: false,
    done: 'The application is no longer verified.',
    run: (operator, actor, id) => operator.setVerified(actor, id, false),
  },
  'resource-server-on': {
    verb: 'Make a resource server:',
    explain: () =>
      "It may introspect any token, including its owner's email (username), and subscribe to the revocation stream. Do this only for your own APIs.",
    button: 'Make it a resource server',
    danger: true,
    done: 'The application is a resource server.',
    run: (operator, actor, id) => operator.setResourceServer(actor, id, true),
  },
  'resource-server-off': {
    verb: 'Stop treating as a resource server:',
    explain: () => 'It may introspect only its own tokens, without username, and its revocation streams end.',
    button: 'Stop being a resource server',
    danger: false,
    done: 'The application is no longer a resource server.',
    run: (operator, actor, id) => operator.setResourceServer(actor, id, false),
  },
  delete: {
    verb: 'Delete',
    explain: () =>
      'The application is deleted with its grants and codes; its access tokens are revoked and resource servers told. This cannot be undone.',
    button: 'Delete application',
    danger: true,
    run: (operator, actor, id) => operator.deleteApplication(actor, id),
  },
}

const DONE: Record<string, string> = {
  ...Object.fromEntries(Object.entries(ACTIONS).flatMap(([k, a]) => (a.done ? [[k, a.done]] : []))),
  'client-credentials': 'The client credentials grant is saved.',
  resources: 'The resource identifiers are saved.',
}

/** /admin/applications: search by name, client_id or owner; one application; its actions. */
export default async function adminApplicationRoutes(app: FastifyInstance, deps: Services): Promise<void> {
  const { operator } = deps
  const load = (request: FastifyRequest<AppParams>) => operator.applicationById(request.params.id)

  app.get<ListQuery>('/admin/applications', (request, reply) => applicationsPage(deps, request, reply))

  app.get<AppQuery>('/admin/applications/:id', (request, reply) => applicationPage(deps, request, reply))

  // Before the generic actions: a static segment wins over `:action` (find-my-way).
  await clientCredentialsRoutes(app, deps)
  await resourceRoutes(app, deps)

  app.get<{ Params: { id: string; action: string } }>(
    '/admin/applications/:id/:action',
    { preHandler: requireRecentAuth(deps) },
    async (request, reply) => {
      const a = await load(request)
      const spec = Object.hasOwn(ACTIONS, request.params.action) ? ACTIONS[request.params.action] : undefined
      if (!a || !spec) return reply.callNotFound()
      return render(request, reply, 'admin/confirm.eta', {
        title: `${spec.verb} ${a.name}`,
        heading: `${spec.verb} ${a.name}?`,
        explain: spec.explain(deps.config.serviceName),
        button: spec.button,
        danger: spec.danger,
        action: `/admin/applications/${a.id}/${request.params.action}`,
        cancel: `/admin/applications/${a.id}`,
      })
    },
  )

  app.post<{ Params: { id: string; action: string } }>(
    '/admin/applications/:id/:action',
    { preHandler: app.csrfProtection },
    async (request, reply) => {
      const a = await load(request)
      const spec = Object.hasOwn(ACTIONS, request.params.action) ? ACTIONS[request.params.action] : undefined
      if (!a || !spec) return reply.callNotFound()
      try {
        await spec.run(operator, actorOf(request), a.id)
      } catch (err) {
        // What Gatehouse will not do (a client without registration is only suspended): said, never a 500.
        if (!(err instanceof RefusedError)) throw err
        return render(request, reply, 'error.eta', { title: 'Request refused', message: err.message }, 409)
      }
      return reply.redirect(spec.done ? `/admin/applications/${a.id}?done=${request.params.action}` : '/admin/applications?deleted=1', 303)
    },
  )
}

type AppQuery = AppParams & { Querystring: { done?: unknown } }

/** GET /admin/applications/:id: one application, its owner and its state. */
async function applicationPage(deps: Services, request: FastifyRequest<AppQuery>, reply: FastifyReply) {
  const a = await deps.operator.applicationById(request.params.id)
  if (!a) return reply.callNotFound()
  const resources = await deps.operator.resourcesOf(a.id)
  return render(request, reply, 'admin/application.eta', {
    title: a.name,
    notice: typeof request.query.done === 'string' ? DONE[request.query.done] : undefined,
    app: {
      id: a.id,
      name: a.name,
      description: a.description,
      clientId: a.client_id,
      owner: a.owner_email,
      ownerId: a.owner_id,
      // A client of a metadata document (docs/agents.md): its client_id is the document's URL.
      metadataFetched: a.metadata_fetched_at === null ? null : formatTime(a.metadata_fetched_at),
      redirectUris: a.redirect_uris,
      postLogoutRedirectUris: a.post_logout_redirect_uris,
      scopes: a.allowed_scopes.join(' '),
      homepageUrl: a.homepage_url,
      privacyPolicyUrl: a.privacy_policy_url,
      created: formatTime(a.created_at),
      suspended: a.suspended_at === null ? null : formatTime(a.suspended_at),
      verified: a.verified_at === null ? null : formatTime(a.verified_at),
      resourceServer: a.is_resource_server,
      resourceIdentifiers: resources.identifiers,
      resourceTokenTtl: resources.ttlSeconds === null ? 'the default' : `${resources.ttlSeconds} s`,
      machine: a.kind === 'machine',
      clientCredentials: a.client_credentials_scopes?.join(' ') ?? null,
      tokens: describeTokenPolicy(tokenPolicyOf(a), a.kind),
    },
  })
}

type ListQuery = { Querystring: { q?: unknown; page?: unknown; deleted?: unknown; unregistered?: unknown } }

/** GET /admin/applications: the search, a page of applications. */
async function applicationsPage(deps: Services, request: FastifyRequest<ListQuery>, reply: FastifyReply) {
  const { operator } = deps
  const asked = listRequest(request.query)
  // "Only clients without registration": the clients of metadata documents (docs/agents.md).
  const unregistered = request.query.unregistered === '1'
  const apps = await operator.searchApplications({ ...asked, metadataClients: unregistered })
  return render(request, reply, 'admin/applications.eta', {
    // A table page: the full width of the window (views/layouts/base.eta).
    wide: true,
    title: 'Applications',
    ...listView(asked, request.query.deleted, apps.length),
    unregistered,
    // The bound on them (CLIENT_ID_METADATA_MAX_CLIENTS), shown with the filter.
    stored: unregistered ? { count: await operator.metadataClientCount(), max: deps.config.clientMetadata?.maxClients ?? null } : null,
    applications: apps.map((a) => ({
      id: a.id,
      name: a.name,
      clientId: a.client_id,
      owner: a.owner_email,
      ownerId: a.owner_id,
      metadataFetched: a.metadata_fetched_at === null ? null : formatTime(a.metadata_fetched_at),
      created: formatTime(a.created_at),
      suspended: a.suspended_at !== null,
      verified: a.verified_at !== null,
      resourceServer: a.is_resource_server,
      kind: KIND_LABELS[a.kind],
      tokens: describeTokenPolicy(tokenPolicyOf(a), a.kind).brief,
    })),
  })
}
