import { COMMAND_LINE } from '../audit/index.js'
import type { Services } from '../services.js'
import { readOutbox } from '../mail/index.js'
import { type Command, UsageError, done } from './command.js'
import { formatTable, iso } from './output.js'

const migrate: Command = {
  arity: 0,
  failure: 'Migration failed',
  // The running server applied its own migrations when it started; newer code's migrations
  // need that code started, and the database to themselves.
  notBesideServer:
    'migrate does not run beside the running server, which applied its migrations when it started: restart it to apply new ones (it migrates at start-up), or stop it and run gatehouse migrate',
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

/** The ID Token signing keys, newest first (docs/openid-connect.md). */
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

/** The database, the outbox and the signing keys (docs/operating/command-line.md). */
/**
 * The scopes this Gatehouse offers, as the console, consent and discovery read them
 * (docs/operating/scopes.md): what `implies` says, and what the consent page shows.
 */
const scopes: Command = {
  arity: 0,
  async run({ services }) {
    const { entries, catalogue } = services.scopes
    const rows = entries.map((e) => ({ name: e.name, implies: e.implies.join(' '), description: e.description }))
    const source = catalogue.impliedAt === 'grant' ? 'SCOPES_FILE' : 'the built-in scopes (SCOPES_FILE unset)'
    const defaults = catalogue.defaultScopes.length === 0 ? 'none: scope is required' : catalogue.defaultScopes.join(' ')
    const text = `${formatTable(rows, ['name', 'implies', 'description'])}

From ${source}. Without a scope parameter: ${defaults}.`
    const json = {
      scopes: entries.map((e) => ({ name: e.name, description: e.description, implies: e.implies })),
      default: catalogue.defaultScopes,
    }
    return { text, json }
  },
}

export const MAINTENANCE_COMMANDS: Readonly<Record<string, Command>> = {
  scopes,
  'keys list': keysList,
  'keys rotate': keysRotate,
  migrate,
  janitor,
  outbox,
}
