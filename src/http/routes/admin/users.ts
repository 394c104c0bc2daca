import type { FastifyInstance, FastifyRequest } from 'fastify'
import { isUuid } from '../../../lib/uuid.js'
import {
  NotFoundError,
  PAGE_SIZE,
  deleteUser,
  requireUserById,
  searchApplications,
  searchUsers,
  suspendUser,
  unsuspendUser,
} from '../../../operator/moderation.js'
import type { Services } from '../../../services.js'
import { render } from '../../render.js'
import { formatTime } from '../console/view-models.js'
import { operatorContext } from './context.js'
import { pageNumber, searchQuery } from './query.js'

type UserParams = { Params: { id: string } }
type Action = 'suspend' | 'unsuspend' | 'delete'

const ACTIONS: Record<Action, { verb: string; explain: string; button: string; danger: boolean }> = {
  suspend: {
    verb: 'Suspend',
    explain:
      'Their sessions end, every access token they hold is revoked, and their applications are suspended with them. They cannot log in until unsuspended.',
    button: 'Suspend account',
    danger: true,
  },
  unsuspend: {
    verb: 'Unsuspend',
    explain:
      'They may log in again, and the applications suspended together with the account are active again. Revoked tokens stay revoked.',
    button: 'Unsuspend account',
    danger: false,
  },
  delete: {
    verb: 'Delete',
    explain: 'The account is deleted with its applications (their tokens revoked), its grants and its tokens. This cannot be undone.',
    button: 'Delete account',
    danger: true,
  },
}

const DONE: Record<string, string> = {
  suspended: 'The account is suspended.',
  unsuspended: 'The account is active again.',
}

function isAction(v: string): v is Action {
  return Object.hasOwn(ACTIONS, v)
}

/** /admin/users: search, one user, and the suspend / unsuspend / delete confirmations. */
export default async function adminUserRoutes(app: FastifyInstance, deps: Services): Promise<void> {
  const { db } = deps.database

  const load = async (request: FastifyRequest<UserParams>) => {
    if (!isUuid(request.params.id)) return undefined
    return requireUserById(db, request.params.id).catch((err) => {
      if (err instanceof NotFoundError) return undefined
      throw err
    })
  }

  app.get<{ Querystring: { q?: unknown; page?: unknown; deleted?: unknown } }>('/admin/users', async (request, reply) => {
    const q = searchQuery(request.query.q)
    const page = pageNumber(request.query.page)
    const users = await searchUsers(db, { query: q, page })
    return render(request, reply, 'admin/users.eta', {
      title: 'Users',
      q,
      page,
      deleted: request.query.deleted === '1',
      hasMore: users.length === PAGE_SIZE,
      users: users.map((u) => ({
        id: u.id,
        email: u.email,
        created: formatTime(u.created_at),
        operator: u.is_operator,
        suspended: u.suspended_at !== null,
        verified: u.email_verified_at !== null,
        applications: u.applications,
      })),
    })
  })

  app.get<UserParams & { Querystring: { done?: unknown } }>('/admin/users/:id', async (request, reply) => {
    const user = await load(request)
    if (!user) return reply.callNotFound()
    const apps = await searchApplications(db, { ownerId: user.id })
    return render(request, reply, 'admin/user.eta', {
      title: user.email,
      notice: typeof request.query.done === 'string' ? DONE[request.query.done] : undefined,
      self: user.id === request.user!.id,
      user: {
        id: user.id,
        email: user.email,
        created: formatTime(user.created_at),
        operator: user.is_operator,
        suspended: user.suspended_at === null ? null : formatTime(user.suspended_at),
        verified: user.email_verified_at === null ? null : formatTime(user.email_verified_at),
      },
      applications: apps.map((a) => ({ id: a.id, name: a.name, clientId: a.client_id, suspended: a.suspended_at !== null })),
    })
  })

  app.get<{ Params: { id: string; action: string } }>('/admin/users/:id/:action', async (request, reply) => {
    const { action } = request.params
    const user = await load(request)
    if (!user || !isAction(action) || user.id === request.user!.id) return reply.callNotFound()
    const a = ACTIONS[action]
    return render(request, reply, 'admin/confirm.eta', {
      title: `${a.verb} ${user.email}`,
      heading: `${a.verb} ${user.email}?`,
      explain: a.explain,
      button: a.button,
      danger: a.danger,
      action: `/admin/users/${user.id}/${action}`,
      cancel: `/admin/users/${user.id}`,
    })
  })

  app.post<{ Params: { id: string; action: string } }>(
    '/admin/users/:id/:action',
    { preHandler: app.csrfProtection },
    async (request, reply) => {
      const { action } = request.params
      const user = await load(request)
      // An operator does not suspend or delete their own account from here: the command line can.
      if (!user || !isAction(action) || user.id === request.user!.id) return reply.callNotFound()
      const ctx = operatorContext(deps, request)
      switch (action) {
        case 'suspend':
          await suspendUser(ctx, user.id, deps.clock())
          return reply.redirect(`/admin/users/${user.id}?done=suspended`, 303)
        case 'unsuspend':
          await unsuspendUser(ctx, user.id)
          return reply.redirect(`/admin/users/${user.id}?done=unsuspended`, 303)
        case 'delete':
          await deleteUser(ctx, user.id, deps.clock())
          return reply.redirect('/admin/users?deleted=1', 303)
      }
    },
  )
}
