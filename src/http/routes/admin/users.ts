import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Services } from '../../../services.js'
import { actorOf } from '../../audit.js'
import { requireRecentAuth } from '../../recent-auth.js'
import { render } from '../../render.js'
import { formatTime } from '../console/view-models.js'
import { listRequest, listView } from './query.js'

type UserParams = { Params: { id: string } }
type Action = 'suspend' | 'unsuspend' | 'delete' | 'reset-second-factor'

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
  'reset-second-factor': {
    verb: 'Reset the second factor of',
    explain:
      'Their authenticator app, passkeys and recovery codes stop working and every session of the account ends: they log in again with their password alone and set up a second factor again. The access they gave to applications and their tokens are kept, but the refresh tokens approved in the sessions that end stop working, as at any log-out. They are told by mail. Do this only for someone whose identity you have checked by other means.',
    button: 'Reset second factor',
    danger: true,
  },
}

const DONE: Record<string, string> = {
  suspended: 'The account is suspended.',
  unsuspended: 'The account is active again.',
  'second-factor-reset': 'The second factor is removed and every session of the account ended; the user was told by mail.',
}

function isAction(v: string): v is Action {
  return Object.hasOwn(ACTIONS, v)
}

/** /admin/users: search, one user, and the suspend / unsuspend / delete / second-factor reset confirmations. */
export default async function adminUserRoutes(app: FastifyInstance, deps: Services): Promise<void> {
  const { operator } = deps
  const load = (request: FastifyRequest<UserParams>) => operator.userById(request.params.id)

  app.get<ListQuery>('/admin/users', (request, reply) => usersPage(deps, request, reply))

  app.get<UserParamsDone>('/admin/users/:id', (request, reply) => userPage(deps, request, reply))

  app.get<{ Params: { id: string; action: string } }>(
    '/admin/users/:id/:action',
    { preHandler: requireRecentAuth(deps) },
    async (request, reply) => {
      const { action } = request.params
      const user = await load(request)
      if (!user || !isAction(action) || !operator.mayModerate(actorOf(request), user.id)) return reply.callNotFound()
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
    },
  )

  app.post<{ Params: { id: string; action: string } }>(
    '/admin/users/:id/:action',
    { preHandler: app.csrfProtection },
    async (request, reply) => {
      const { action } = request.params
      const user = await load(request)
      const actor = actorOf(request)
      // An operator does not suspend, delete or reset the second factor of their own account from
      // here: the command line can (src/operator/use-cases.ts says why).
      if (!user || !isAction(action) || !operator.mayModerate(actor, user.id)) return reply.callNotFound()
      switch (action) {
        case 'suspend':
          await operator.suspendUser(actor, user.id)
          return reply.redirect(`/admin/users/${user.id}?done=suspended`, 303)
        case 'unsuspend':
          await operator.unsuspendUser(actor, user.id)
          return reply.redirect(`/admin/users/${user.id}?done=unsuspended`, 303)
        case 'delete':
          await operator.deleteUser(actor, user.id)
          return reply.redirect('/admin/users?deleted=1', 303)
        case 'reset-second-factor':
          await operator.resetSecondFactor(actor, user.id)
          return reply.redirect(`/admin/users/${user.id}?done=second-factor-reset`, 303)
      }
    },
  )
}

type ListQuery = { Querystring: { q?: unknown; page?: unknown; deleted?: unknown } }

/** GET /admin/users: the search, a page of users. */
async function usersPage(deps: Services, request: FastifyRequest<ListQuery>, reply: FastifyReply) {
  const { operator } = deps
  const asked = listRequest(request.query)
  const users = await operator.searchUsers(asked)
  return render(request, reply, 'admin/users.eta', {
    // A table page: the full width of the window (views/layouts/base.eta).
    wide: true,
    title: 'Users',
    ...listView(asked, request.query.deleted, users.length),
    users: users.map((u) => ({
      id: u.id,
      email: u.email,
      created: formatTime(u.created_at),
      operator: u.is_operator,
      suspended: u.suspended_at !== null,
      verified: u.email_verified_at !== null,
      secondFactor: u.second_factor,
      applications: u.applications,
    })),
  })
}

type UserParamsDone = UserParams & { Querystring: { done?: unknown } }

/** One user's page: who they are, their applications, and the actions an operator may take. */
async function userPage(deps: Services, request: FastifyRequest<UserParamsDone>, reply: FastifyReply) {
  const { operator } = deps
  const user = await operator.userById(request.params.id)
  if (!user) return reply.callNotFound()
  const apps = await operator.searchApplications({ ownerId: user.id })
  const factors = await operator.secondFactorOf(user.id)
  return render(request, reply, 'admin/user.eta', {
    title: user.email,
    notice: typeof request.query.done === 'string' ? DONE[request.query.done] : undefined,
    self: !operator.mayModerate(actorOf(request), user.id),
    user: {
      id: user.id,
      email: user.email,
      created: formatTime(user.created_at),
      operator: user.is_operator,
      suspended: user.suspended_at === null ? null : formatTime(user.suspended_at),
      verified: user.email_verified_at === null ? null : formatTime(user.email_verified_at),
    },
    applications: apps.map((a) => ({ id: a.id, name: a.name, clientId: a.client_id, suspended: a.suspended_at !== null })),
    secondFactor: { enrolled: user.second_factor, ...factors },
  })
}
