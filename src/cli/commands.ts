import type { MigrationResult } from 'kysely'
import type { MailSettings } from '../mail/mailer.js'
import { COMMAND_LINE, type Services, readOutbox } from '../services.js'
import { formatRecord, formatTable, iso } from './output.js'

/*
 * The command line's commands (README "Operating Gatehouse"), one small handler each: it reads
 * its arguments, makes one call into the services' operator or maintenance use cases, and says
 * what happened as text for people and as JSON for scripts. A new command is one more entry in
 * COMMANDS (and a line of USAGE in output.ts).
 */

export class UsageError extends Error {
  override name = 'UsageError'
}

export type Flags = { search?: string; page?: string; app?: string; user?: string; to?: string; last?: boolean }

export interface Output {
  text: string
  json: unknown
}

/** What a handler is given: the words after its command's name, the options, and the services. */
export interface Invocation {
  args: readonly string[]
  flags: Flags
  services: Pick<Services, 'operator' | 'maintenance' | 'identity'>
  /** The migrations the command line applied before this command (every command migrates first). */
  migrated: readonly MigrationResult[]
}

export interface Command {
  /** How many words the command takes after its name; more is a usage error. */
  arity: number
  run(call: Invocation): Promise<Output>
  /** A command that reads files only (the outbox): run without opening the database, which the server may hold. */
  offline?: (call: { flags: Flags; mail: Pick<MailSettings, 'smtpUrl' | 'outboxDir'> }) => Promise<Output>
  /** How a failure is introduced instead of "gatehouse:" (`npm run migrate` and `npm run janitor` have always said so). */
  failure?: string
}

function page(flags: Flags): number {
  if (flags.page === undefined) return 1
  const n = Number(flags.page)
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError('--page must be a whole number from 1')
  return n
}

function argument(args: readonly string[], index: number, what: string): string {
  const value = args[index]
  if (value === undefined || value.trim() === '') throw new UsageError(`missing ${what}`)
  return value
}

function done(text: string, json: Record<string, unknown>): Output {
  return { text, json: { ok: true, ...json } }
}

/**
 * What a switch command did, in plain word order: "X is now verified.", "X is already verified.",
 * "X is no longer verified.", "X is not verified." (the last when there was nothing to remove).
 */
function stateChange(subject: string, on: boolean, changed: boolean, state: string): string {
  if (on) return `${subject} is ${changed ? 'now' : 'already'} ${state}.`
  return `${subject} is ${changed ? 'no longer' : 'not'} ${state}.`
}

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
  const text = `${user.email} has no second factor now: ${factors} factors and recovery codes removed, ${endedSessions} sessions ended, grants and tokens kept; ${mailSent ? 'the user was told by mail' : 'the mail to the user could not be sent'}.`
  return done(text, { email: user.email, factors, ended_sessions: endedSessions, mail_sent: mailSent })
})

const appsList: Command = {
  arity: 0,
  async run({ flags, services }) {
    const apps = await services.operator.searchApplications({ query: flags.search, page: page(flags) })
    const rows = apps.map((a) => ({
      client_id: a.client_id,
      name: a.name,
      owner: a.owner_email,
      created: iso(a.created_at),
      suspended: iso(a.suspended_at),
      verified: iso(a.verified_at),
      resource_server: a.is_resource_server,
    }))
    return { text: formatTable(rows, ['client_id', 'name', 'owner', 'created', 'suspended', 'verified', 'resource_server']), json: rows }
  },
}

const appsShow: Command = {
  arity: 1,
  async run({ args, services }) {
    const app = await services.operator.applicationByClientId(argument(args, 0, 'client_id'))
    const row = {
      client_id: app.client_id,
      name: app.name,
      owner: app.owner_email,
      redirect_uris: app.redirect_uris.join(' '),
      post_logout_redirect_uris: app.post_logout_redirect_uris.join(' '),
      scopes: app.allowed_scopes.join(' '),
      homepage_url: app.homepage_url,
      privacy_policy_url: app.privacy_policy_url,
      created: iso(app.created_at),
      suspended: iso(app.suspended_at),
      verified: iso(app.verified_at),
      resource_server: app.is_resource_server,
    }
    return {
      text: formatRecord(row),
      json: {
        ...row,
        redirect_uris: app.redirect_uris,
        post_logout_redirect_uris: app.post_logout_redirect_uris,
        scopes: app.allowed_scopes,
      },
    }
  },
}

type AppRef = { id: string; client_id: string; name: string }

/** A command on one application, named by client_id. */
function onApp(act: (services: Invocation['services'], app: AppRef, name: string) => Promise<Output>): Command {
  return {
    arity: 1,
    async run({ args, services }) {
      const app = await services.operator.applicationByClientId(argument(args, 0, 'client_id'))
      return act(services, app, `${app.name} (${app.client_id})`)
    },
  }
}

const appsSuspend = onApp(async ({ operator }, app, name) => {
  const { changed, revoked } = await operator.suspendApplication(COMMAND_LINE, app.id)
  const text = changed ? `${name} is suspended; ${revoked} tokens and its codes are revoked.` : `${name} was already suspended.`
  return done(text, { client_id: app.client_id, changed, revoked })
})

const appsUnsuspend = onApp(async ({ operator }, app, name) => {
  const { changed } = await operator.unsuspendApplication(COMMAND_LINE, app.id)
  return done(changed ? `${name} may authorize users again.` : `${name} was not suspended.`, { client_id: app.client_id, changed })
})

function appsVerify(on: boolean): Command {
  return onApp(async ({ operator }, app, name) => {
    const { changed } = await operator.setVerified(COMMAND_LINE, app.id, on)
    return done(stateChange(name, on, changed, 'verified'), { client_id: app.client_id, changed })
  })
}

const appsDelete = onApp(async ({ operator }, app, name) => {
  await operator.deleteApplication(COMMAND_LINE, app.id)
  return done(`${name} is deleted; its tokens are revoked.`, { client_id: app.client_id })
})

const appsResourceServer: Command = {
  arity: 2,
  async run({ args, services }) {
    const app = await services.operator.applicationByClientId(argument(args, 0, 'client_id'))
    const setting = argument(args, 1, 'on or off')
    if (setting !== 'on' && setting !== 'off') throw new UsageError('apps resource-server takes on or off')
    const { changed } = await services.operator.setResourceServer(COMMAND_LINE, app.id, setting === 'on')
    return done(stateChange(`${app.name} (${app.client_id})`, setting === 'on', changed, 'a resource server'), {
      client_id: app.client_id,
      resource_server: setting === 'on',
      changed,
    })
  },
}

const tokensRevoke: Command = {
  arity: 0,
  async run({ flags, services: { operator } }) {
    if (flags.app === undefined) throw new UsageError('tokens revoke needs --app <client_id>')
    const app = await operator.applicationByClientId(flags.app)
    const user = flags.user === undefined ? undefined : await operator.userByEmail(flags.user)
    const { revoked } = await operator.revokeTokens(COMMAND_LINE, app.id, user?.id)
    return done(`${revoked} tokens of ${app.name} (${app.client_id})${user ? ` for ${user.email}` : ''} revoked.`, {
      client_id: app.client_id,
      user: user?.email ?? null,
      revoked,
    })
  },
}

const migrate: Command = {
  arity: 0,
  failure: 'Migration failed',
  // The command line has migrated already, as before every command: this one says what that did.
  async run({ migrated }) {
    const text = migrated.length === 0 ? 'The database is up to date.' : migrated.map((m) => `${m.status}: ${m.migrationName}`).join('\n')
    return done(text, { migrations: migrated.map((m) => m.migrationName) })
  },
}

const janitor: Command = {
  arity: 0,
  failure: 'Janitor failed',
  async run({ services }) {
    const { ran, removed } = await services.maintenance.janitor()
    if (!ran) return done('Another Gatehouse process is running the janitor; nothing done.', { ran, removed })
    const text = Object.entries(removed)
      .map(([table, n]) => `${table}: ${n} removed`)
      .join('\n')
    return done(text, { ran, removed })
  },
}

/** How many mails `gatehouse outbox` shows without --last. */
const OUTBOX_MAILS = 5

function formatMail(m: Awaited<ReturnType<typeof readOutbox>>[number]): string {
  const links = m.links.length === 0 ? ['  (none)'] : m.links.map((l) => `  ${l}`)
  return [m.file, `Date:    ${m.date ?? '-'}`, `To:      ${m.to}`, `Subject: ${m.subject}`, '', m.text, '', 'Links:', ...links].join('\n')
}

/** The outbox is files, not the database: it is read while the server holds the embedded one. */
const outbox: Command = {
  arity: 0,
  run() {
    throw new Error('gatehouse outbox runs offline')
  },
  async offline({ flags, mail }) {
    if (mail.smtpUrl !== undefined) throw new UsageError('SMTP_URL is set, so mails go to the SMTP server, not to the outbox')
    const dir = mail.outboxDir
    const mails = await readOutbox(dir, { to: flags.to, limit: flags.last ? 1 : OUTBOX_MAILS })
    if (mails.length === 0) return { text: `No mail${flags.to ? ` to ${flags.to.trim()}` : ''} in ${dir}.`, json: [] }
    return { text: mails.map(formatMail).join(`\n\n${'-'.repeat(72)}\n\n`), json: mails }
  },
}

type KeyInfo = Awaited<ReturnType<Services['identity']['listKeys']>>[number]

function keyRow(k: KeyInfo) {
  return {
    kid: k.kid,
    alg: k.alg,
    created: iso(k.createdAt),
    signs_from: iso(k.notBefore),
    retired: iso(k.retiredAt),
    unpublished_after: iso(k.notAfter),
  }
}

const KEY_COLUMNS = ['kid', 'alg', 'created', 'signs_from', 'retired', 'unpublished_after']

/** The ID Token signing keys, newest first (README "Sign in with Gatehouse (OpenID Connect)"). */
const keysList: Command = {
  arity: 0,
  async run({ services }) {
    const rows = (await services.identity.listKeys()).map(keyRow)
    return {
      text:
        rows.length === 0 ? 'No signing keys yet: the first is made when the first ID Token is signed.' : formatTable(rows, KEY_COLUMNS),
      json: rows,
    }
  },
}

/** The next key of each algorithm: published now, signing once every cached JWKS has it. */
const keysRotate: Command = {
  arity: 0,
  async run({ services }) {
    const added = await services.identity.rotateKeys(COMMAND_LINE)
    const lines = added.map((k) => `${k.alg} key ${k.kid} is published now and signs from ${iso(k.notBefore)}.`)
    return done(
      `${lines.join('\n')}\nThe previous keys sign until then and stay published until the last ID Token they signed has expired.`,
      {
        keys: added.map(keyRow),
      },
    )
  },
}

/** Every command, by its name (one or two words). */
export const COMMANDS: Readonly<Record<string, Command>> = {
  'admin add': operatorRole(true),
  'admin remove': operatorRole(false),
  'admin list': adminList,
  'users list': usersList,
  'users show': usersShow,
  'users suspend': usersSuspend,
  'users unsuspend': usersUnsuspend,
  'users delete': usersDelete,
  'users reset-second-factor': usersResetSecondFactor,
  'apps list': appsList,
  'apps show': appsShow,
  'apps suspend': appsSuspend,
  'apps unsuspend': appsUnsuspend,
  'apps verify': appsVerify(true),
  'apps unverify': appsVerify(false),
  'apps resource-server': appsResourceServer,
  'apps delete': appsDelete,
  'tokens revoke': tokensRevoke,
  'keys list': keysList,
  'keys rotate': keysRotate,
  migrate,
  janitor,
  outbox,
}

/** The command named by the first words of argv, and the words after its name. */
export function findCommand(positionals: readonly string[]): { command: Command; args: readonly string[] } {
  for (const words of [2, 1]) {
    const name = positionals.slice(0, words).join(' ')
    if (positionals.length >= words && Object.hasOwn(COMMANDS, name)) {
      const args = positionals.slice(words)
      return { command: COMMANDS[name]!, args }
    }
  }
  throw new UsageError(`unknown command: ${positionals.join(' ')}`)
}
