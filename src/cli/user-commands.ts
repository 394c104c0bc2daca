import { COMMAND_LINE } from '../audit/index.js'
import { type Command, type Invocation, type Output, argument, done, page, stateChange } from './command.js'
import { formatRecord, formatTable, iso } from './output.js'

function operatorRole(on: boolean): Command {
  return {
    arity: 1,
    async run({ args, services }) {
      const { user, changed } = await services.operator.setOperatorRole(COMMAND_LINE, argument(args, 0, 'email'), on)
      return done(stateChange(user.email, on, changed, 'an operator'), {
        email: user.email,
        operator: on,
        changed,
      })
    },
  }
}

const adminList: Command = {
  arity: 0,
  async run({ flags, services }) {
    const users = await services.operator.searchUsers({ operatorsOnly: true, page: page(flags) })
    const rows = users.map((u) => ({ email: u.email, created: iso(u.created_at), suspended: iso(u.suspended_at) }))
    return { text: formatTable(rows, ['email', 'created', 'suspended']), json: rows }
  },
}

const usersList: Command = {
  arity: 0,
  async run({ flags, services }) {
    const users = await services.operator.searchUsers({ query: flags.search, page: page(flags) })
    const rows = users.map((u) => ({
      email: u.email,
      id: u.id,
      created: iso(u.created_at),
      operator: u.is_operator,
      suspended: iso(u.suspended_at),
      applications: u.applications,
    }))
    return { text: formatTable(rows, ['email', 'id', 'created', 'operator', 'suspended', 'applications']), json: rows }
  },
}

const usersShow: Command = {
  arity: 1,
  async run({ args, services }) {
    const user = await services.operator.userByEmail(argument(args, 0, 'email'))
    const apps = await services.operator.searchApplications({ ownerId: user.id })
    const row = {
      email: user.email,
      id: user.id,
      created: iso(user.created_at),
      email_verified: user.email_verified_at === null ? 'no' : `yes, ${iso(user.email_verified_at)}`,
      second_factor: user.second_factor,
      operator: user.is_operator,
      suspended: iso(user.suspended_at),
      applications: apps.map((a) => a.client_id).join(', ') || null,
    }
    return {
      text: formatRecord(row),
      json: {
        ...row,
        email_verified: user.email_verified_at !== null,
        email_verified_at: iso(user.email_verified_at),
        applications: apps.map((a) => ({ client_id: a.client_id, name: a.name })),
      },
    }
  },
}

/** A command on one user, named by email. */
function onUser(act: (services: Invocation['services'], user: { id: string; email: string }) => Promise<Output>): Command {
  return {
    arity: 1,
    async run({ args, services }) {
      return act(services, await services.operator.userByEmail(argument(args, 0, 'email')))
    },
  }
}

const usersSuspend = onUser(async ({ operator }, user) => {
  const { changed } = await operator.suspendUser(COMMAND_LINE, user.id)
  const text = changed
    ? `${user.email} is suspended: sessions ended, tokens revoked, applications suspended.`
    : `${user.email} was already suspended.`
  return done(text, { email: user.email, changed })
})

const usersUnsuspend = onUser(async ({ operator }, user) => {
  const { changed, applications } = await operator.unsuspendUser(COMMAND_LINE, user.id)
  const text = changed
    ? `${user.email} may log in again; ${applications} applications suspended with the account are active again.`
    : `${user.email} was not suspended.`
  return done(text, { email: user.email, changed, applications })
})

const usersDelete = onUser(async ({ operator }, user) => {
  const { applications } = await operator.deleteUser(COMMAND_LINE, user.id)
  return done(`${user.email} is deleted, with ${applications} applications, their grants and tokens.`, { email: user.email, applications })
})

const usersResetSecondFactor = onUser(async ({ operator }, user) => {
  const { factors, endedSessions, mailSent } = await operator.resetSecondFactor(COMMAND_LINE, user.id)
  const text = `${user.email} has no second factor now: ${factors} factors and recovery codes removed, ${endedSessions} sessions ended with their refresh tokens, grants and other tokens kept; ${mailSent ? 'the user was told by mail' : 'the mail to the user could not be sent'}.`
  return done(text, { email: user.email, factors, ended_sessions: endedSessions, mail_sent: mailSent })
})

/** Operators and users (docs/operating/command-line.md). */
export const USER_COMMANDS: Readonly<Record<string, Command>> = {
  'admin add': operatorRole(true),
  'admin remove': operatorRole(false),
  'admin list': adminList,
  'users list': usersList,
  'users show': usersShow,
  'users suspend': usersSuspend,
  'users unsuspend': usersUnsuspend,
  'users delete': usersDelete,
  'users reset-second-factor': usersResetSecondFactor,
}
