import { parseArgs } from 'node:util'
import type { Config } from '../config.js'
import { describeFailure } from '../db/availability.js'
import type { DatabaseHandle } from '../db/connect.js'
import { DataDirInUseError } from '../db/data-dir-lock.js'
import { migrateToLatest } from '../db/migrate.js'
import type { Clock } from '../lib/clock.js'
import { Janitor } from '../limits/janitor.js'
import { readOutbox } from '../mail/outbox-reader.js'
import {
  NotFoundError,
  type OperatorContext,
  RefusedError,
  type OperatorEvent,
  deleteApplicationAsOperator,
  deleteUser,
  requireApplication,
  requireUser,
  revokeApplicationTokens,
  searchApplications,
  searchUsers,
  setOperatorRole,
  setResourceServer,
  setVerified,
  suspendApplication,
  suspendUser,
  unsuspendApplication,
  unsuspendUser,
} from '../operator/moderation.js'
import { RevocationBus } from '../revocation/bus.js'
import { USAGE, formatRecord, formatTable, iso } from './output.js'

/*
 * `gatehouse …`, the operator's command line (README "Operating Gatehouse"). It reads the
 * server's configuration (the same environment variables), does one thing, and exits: 0 on
 * success; 1 with one line on stderr for a user error (an unknown email or client_id, a bad
 * argument, the embedded database held by the server) or a failure, never a stack trace.
 * Output is a table for people, or JSON with --json for scripts.
 */

export interface CliIo {
  out(text: string): void
  err(text: string): void
}

export interface CliDeps {
  config: Config
  clock: Clock
  /** Opens (without migrating) the configured database; closed by runCli. */
  openDatabase(): Promise<DatabaseHandle>
  /** Records an operator action made from the command line in the audit log. */
  record(database: DatabaseHandle, event: OperatorEvent): Promise<void>
}

class UsageError extends Error {
  override name = 'UsageError'
}

/** Runs one command; returns the exit code. */
export async function runCli(argv: readonly string[], deps: CliDeps, io: CliIo): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
        search: { type: 'string' },
        page: { type: 'string' },
        app: { type: 'string' },
        user: { type: 'string' },
        to: { type: 'string' },
        last: { type: 'boolean', default: false },
      },
    })
  } catch (err) {
    io.err(`gatehouse: ${err instanceof Error ? err.message : String(err)} (gatehouse --help lists the commands)`)
    return 1
  }
  const { values, positionals } = parsed
  if (values.help || positionals.length === 0) {
    io.out(USAGE)
    return positionals.length === 0 && !values.help ? 1 : 0
  }

  // The outbox is files, not the database: it is read while the server holds the embedded one.
  if (positionals[0] === 'outbox') {
    try {
      const result = await outbox(positionals, values, deps.config)
      io.out(values.json ? JSON.stringify(result.json, null, 2) : result.text)
      return 0
    } catch (err) {
      io.err(`gatehouse: ${err instanceof UsageError ? `${err.message} (gatehouse --help lists the commands)` : messageOf(err)}`)
      return 1
    }
  }

  let database: DatabaseHandle | undefined
  try {
    database = await deps.openDatabase()
    await migrateToLatest(database.db)
    const db = database
    const ctx: OperatorContext = {
      db: db.db,
      bus: new RevocationBus(db, { warn() {}, info() {} }),
      record: (event) => deps.record(db, event),
    }
    const result = await dispatch(positionals, values, ctx, db, deps)
    io.out(values.json ? JSON.stringify(result.json, null, 2) : result.text)
    return 0
  } catch (err) {
    io.err(`gatehouse: ${messageOf(err)}`)
    return 1
  } finally {
    await database?.close().catch(() => {})
  }
}

/** How many mails `gatehouse outbox` shows without --last. */
const OUTBOX_MAILS = 5

async function outbox(positionals: readonly string[], flags: Flags & { to?: string; last?: boolean }, config: Config): Promise<Output> {
  noMore(positionals, 1)
  if (config.mail.smtpUrl !== undefined) throw new UsageError('SMTP_URL is set, so mails go to the SMTP server, not to the outbox')
  const dir = config.mail.outboxDir
  const mails = await readOutbox(dir, { to: flags.to, limit: flags.last ? 1 : OUTBOX_MAILS })
  if (mails.length === 0) return { text: `No mail${flags.to ? ` to ${flags.to.trim()}` : ''} in ${dir}.`, json: [] }
  const text = mails
    .map((m) =>
      [
        `${m.file}`,
        `Date:    ${m.date ?? '-'}`,
        `To:      ${m.to}`,
        `Subject: ${m.subject}`,
        '',
        m.text,
        '',
        'Links:',
        ...(m.links.length === 0 ? ['  (none)'] : m.links.map((l) => `  ${l}`)),
      ].join('\n'),
    )
    .join(`\n\n${'-'.repeat(72)}\n\n`)
  return { text, json: mails }
}

function messageOf(err: unknown): string {
  if (err instanceof UsageError) return `${err.message} (gatehouse --help lists the commands)`
  if (err instanceof NotFoundError || err instanceof RefusedError || err instanceof DataDirInUseError) return err.message
  return describeFailure(err)
}

interface Output {
  text: string
  json: unknown
}

type Flags = { search?: string; page?: string; app?: string; user?: string }

function page(flags: Flags): number {
  if (flags.page === undefined) return 1
  const n = Number(flags.page)
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError('--page must be a whole number from 1')
  return n
}

function argument(positionals: readonly string[], index: number, what: string): string {
  const value = positionals[index]
  if (value === undefined || value.trim() === '') throw new UsageError(`missing ${what}`)
  return value
}

function noMore(positionals: readonly string[], count: number): void {
  if (positionals.length > count) throw new UsageError(`unexpected argument ${positionals[count]}`)
}

/**
 * What a switch command did, in plain word order: "X is now verified.", "X is already verified.",
 * "X is no longer verified.", "X is not verified." (the last when there was nothing to remove).
 */
function stateChange(subject: string, on: boolean, changed: boolean, state: string): string {
  if (on) return `${subject} is ${changed ? 'now' : 'already'} ${state}.`
  return `${subject} is ${changed ? 'no longer' : 'not'} ${state}.`
}

function done(text: string, json: Record<string, unknown>): Output {
  return { text, json: { ok: true, ...json } }
}

async function dispatch(
  positionals: readonly string[],
  flags: Flags,
  ctx: OperatorContext,
  database: DatabaseHandle,
  deps: CliDeps,
): Promise<Output> {
  const [group, action] = positionals
  const now = deps.clock()
  switch (`${group} ${action ?? ''}`.trim()) {
    case 'admin add':
    case 'admin remove': {
      const email = argument(positionals, 2, 'email')
      noMore(positionals, 3)
      const { user, changed } = await setOperatorRole(ctx, email, action === 'add')
      return done(stateChange(user.email, action === 'add', changed, 'an operator'), {
        email: user.email,
        operator: action === 'add',
        changed,
      })
    }
    case 'admin list': {
      noMore(positionals, 2)
      const rows = (await searchUsers(ctx.db, { operatorsOnly: true, page: page(flags) })).map((u) => ({
        email: u.email,
        created: iso(u.created_at),
        suspended: iso(u.suspended_at),
      }))
      return { text: formatTable(rows, ['email', 'created', 'suspended']), json: rows }
    }
    case 'users list': {
      noMore(positionals, 2)
      const rows = (await searchUsers(ctx.db, { query: flags.search, page: page(flags) })).map((u) => ({
        email: u.email,
        id: u.id,
        created: iso(u.created_at),
        operator: u.is_operator,
        suspended: iso(u.suspended_at),
        applications: u.applications,
      }))
      return { text: formatTable(rows, ['email', 'id', 'created', 'operator', 'suspended', 'applications']), json: rows }
    }
    case 'users show': {
      const user = await requireUser(ctx.db, argument(positionals, 2, 'email'))
      noMore(positionals, 3)
      const apps = await searchApplications(ctx.db, { ownerId: user.id })
      const row = {
        email: user.email,
        id: user.id,
        created: iso(user.created_at),
        // An unverified address was never shown to belong to the account's holder.
        email_verified: user.email_verified_at === null ? 'no' : `yes, ${iso(user.email_verified_at)}`,
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
    }
    case 'users suspend':
    case 'users unsuspend':
    case 'users delete': {
      const user = await requireUser(ctx.db, argument(positionals, 2, 'email'))
      noMore(positionals, 3)
      if (action === 'suspend') {
        const { changed } = await suspendUser(ctx, user.id, now)
        return done(
          changed
            ? `${user.email} is suspended: sessions ended, tokens revoked, applications suspended.`
            : `${user.email} was already suspended.`,
          { email: user.email, changed },
        )
      }
      if (action === 'unsuspend') {
        const { changed, applications } = await unsuspendUser(ctx, user.id)
        return done(
          changed
            ? `${user.email} may log in again; ${applications} applications suspended with the account are active again.`
            : `${user.email} was not suspended.`,
          { email: user.email, changed, applications },
        )
      }
      const { applications } = await deleteUser(ctx, user.id, now)
      return done(`${user.email} is deleted, with ${applications} applications, their grants and tokens.`, {
        email: user.email,
        applications,
      })
    }
    case 'apps list': {
      noMore(positionals, 2)
      const rows = (await searchApplications(ctx.db, { query: flags.search, page: page(flags) })).map((a) => ({
        client_id: a.client_id,
        name: a.name,
        owner: a.owner_email,
        created: iso(a.created_at),
        suspended: iso(a.suspended_at),
        verified: iso(a.verified_at),
        resource_server: a.is_resource_server,
      }))
      return { text: formatTable(rows, ['client_id', 'name', 'owner', 'created', 'suspended', 'verified', 'resource_server']), json: rows }
    }
    case 'apps show': {
      const app = await requireApplication(ctx.db, { clientId: argument(positionals, 2, 'client_id') })
      noMore(positionals, 3)
      const row = {
        client_id: app.client_id,
        name: app.name,
        owner: app.owner_email,
        redirect_uris: app.redirect_uris.join(' '),
        scopes: app.allowed_scopes.join(' '),
        homepage_url: app.homepage_url,
        privacy_policy_url: app.privacy_policy_url,
        created: iso(app.created_at),
        suspended: iso(app.suspended_at),
        verified: iso(app.verified_at),
        resource_server: app.is_resource_server,
      }
      return { text: formatRecord(row), json: { ...row, redirect_uris: app.redirect_uris, scopes: app.allowed_scopes } }
    }
    case 'apps suspend':
    case 'apps unsuspend':
    case 'apps verify':
    case 'apps unverify':
    case 'apps delete': {
      const app = await requireApplication(ctx.db, { clientId: argument(positionals, 2, 'client_id') })
      noMore(positionals, 3)
      const name = `${app.name} (${app.client_id})`
      switch (action) {
        case 'suspend': {
          const { changed, revoked } = await suspendApplication(ctx, app.id, now)
          return done(changed ? `${name} is suspended; ${revoked} tokens and its codes are revoked.` : `${name} was already suspended.`, {
            client_id: app.client_id,
            changed,
            revoked,
          })
        }
        case 'unsuspend': {
          const { changed } = await unsuspendApplication(ctx, app.id)
          return done(changed ? `${name} may authorize users again.` : `${name} was not suspended.`, { client_id: app.client_id, changed })
        }
        case 'verify':
        case 'unverify': {
          const { changed } = await setVerified(ctx, app.id, action === 'verify', now)
          return done(stateChange(name, action === 'verify', changed, 'verified'), { client_id: app.client_id, changed })
        }
        default:
          await deleteApplicationAsOperator(ctx, app.id, now)
          return done(`${name} is deleted; its tokens are revoked.`, { client_id: app.client_id })
      }
    }
    case 'apps resource-server': {
      const app = await requireApplication(ctx.db, { clientId: argument(positionals, 2, 'client_id') })
      const setting = argument(positionals, 3, 'on or off')
      noMore(positionals, 4)
      if (setting !== 'on' && setting !== 'off') throw new UsageError('apps resource-server takes on or off')
      const { changed } = await setResourceServer(ctx, app.id, setting === 'on', now)
      return done(stateChange(`${app.name} (${app.client_id})`, setting === 'on', changed, 'a resource server'), {
        client_id: app.client_id,
        resource_server: setting === 'on',
        changed,
      })
    }
    case 'tokens revoke': {
      noMore(positionals, 2)
      if (flags.app === undefined) throw new UsageError('tokens revoke needs --app <client_id>')
      const app = await requireApplication(ctx.db, { clientId: flags.app })
      const user = flags.user === undefined ? undefined : await requireUser(ctx.db, flags.user)
      const { revoked } = await revokeApplicationTokens(ctx, app.id, user?.id, now)
      return done(`${revoked} tokens of ${app.name} (${app.client_id})${user ? ` for ${user.email}` : ''} revoked.`, {
        client_id: app.client_id,
        user: user?.email ?? null,
        revoked,
      })
    }
    case 'migrate': {
      noMore(positionals, 1)
      // runCli has migrated already, like every command.
      return done('The database is up to date.', {})
    }
    case 'janitor': {
      noMore(positionals, 1)
      const janitor = new Janitor({ database, clock: deps.clock, log: { info() {}, warn() {} }, ...deps.config.janitor })
      const { ran, removed } = await janitor.runOnce()
      if (!ran) return done('Another Gatehouse process is running the janitor; nothing done.', { ran, removed })
      return done(
        Object.entries(removed)
          .map(([table, n]) => `${table}: ${n} removed`)
          .join('\n'),
        { ran, removed },
      )
    }
    default:
      throw new UsageError(`unknown command: ${positionals.join(' ')}`)
  }
}
