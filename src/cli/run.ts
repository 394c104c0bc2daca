import { parseArgs } from 'node:util'
import type { MailSettings } from '../mail/index.js'
import { DataDirInUseError, describeFailure } from '../db/index.js'
import { NotFoundError, RefusedError } from '../operator/index.js'
import { SecretKeyError } from '../lib/secret-key.js'
import type { Services } from '../services.js'
import { type Command, type Flags, UsageError } from './command.js'
import { findCommand } from './commands.js'
import { USAGE } from './output.js'

/*
 * `gatehouse …`, the operator's command line (docs/operating/command-line.md). It reads the
 * server's configuration (the same environment variables), does one thing, and exits: 0 on
 * success; 1 with one line on stderr for a user error (an unknown email or client_id, a bad
 * argument, the embedded database held by the server) or a failure, never a stack trace.
 * Output is a table for people, or JSON with --json for scripts. The commands are in
 * ./commands.ts; the services are the server's (src/services.ts, role 'cli').
 */

export interface CliIo {
  out(text: string): void
  err(text: string): void
}

/** What a command runs on; closed by runCli. */
export type CliServices = Pick<Services, 'operator' | 'maintenance' | 'identity' | 'scopes' | 'close'>

type Parsed = { flags: Flags & { json: boolean; help: boolean }; positionals: string[] }

function parse(argv: readonly string[]): Parsed {
  const { values, positionals } = parseArgs({
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
      scopes: { type: 'string' },
      to: { type: 'string' },
      last: { type: 'boolean', default: false },
      add: { type: 'string', multiple: true },
      remove: { type: 'string', multiple: true },
      ttl: { type: 'string' },
    },
  })
  return { flags: values, positionals }
}

/** A refusal of what was typed, with where to look. */
const usage = (message: string): string => `${message} (gatehouse --help lists the commands)`

/**
 * Writes a failure as the one line the command line promises (docs/operating/command-line.md) and
 * gives the exit code. Some messages come worded over several lines (node:util's parseArgs, a
 * driver's error), so every line break is folded here, for every command.
 */
function refuse(io: CliIo, who: string, message: string): 1 {
  io.err(`${who}: ${message.trim().replace(/\s*\n\s*/g, ' ')}`)
  return 1
}

function messageOf(err: unknown): string {
  if (err instanceof UsageError) return usage(err.message)
  if (err instanceof NotFoundError || err instanceof RefusedError || err instanceof DataDirInUseError || err instanceof SecretKeyError) {
    return err.message
  }
  return describeFailure(err)
}

/** What the command line runs on: the services, built only once a command that needs them is known, and where mail goes. */
export interface CliEnvironment {
  open(): Promise<CliServices>
  mail: Pick<MailSettings, 'smtpUrl' | 'outboxDir'>
  /**
   * With the embedded database held by a running server: the command sent to that server to run
   * (src/cli/control-client.ts); its exit code, or undefined when no server answers.
   */
  forward?(argv: readonly string[], io: CliIo): Promise<number | undefined>
  /**
   * The command runs inside the server, sent over its socket (src/cli/control-server.ts): the
   * server migrated when it started, and a command that needs the database to itself is refused.
   */
  inServer?: boolean
}

/** Runs one command; returns the exit code. */
export async function runCli(argv: readonly string[], env: CliEnvironment, io: CliIo): Promise<number> {
  let parsed: Parsed
  let found: { command: Command; args: readonly string[] }
  try {
    parsed = parse(argv)
    if (parsed.flags.help || parsed.positionals.length === 0) {
      io.out(USAGE)
      return parsed.positionals.length === 0 && !parsed.flags.help ? 1 : 0
    }
    found = findCommand(parsed.positionals)
    if (found.args.length > found.command.arity) throw new UsageError(`unexpected argument ${found.args[found.command.arity]}`)
  } catch (err) {
    return refuse(io, 'gatehouse', usage(err instanceof Error ? err.message : String(err)))
  }
  return found.command.offline ? runOffline(found.command, parsed, env, io) : run(found, parsed, argv, env, io)
}

async function runOffline(command: Command, { flags }: Parsed, env: CliEnvironment, io: CliIo): Promise<number> {
  try {
    const result = await command.offline!({ flags, mail: env.mail })
    io.out(flags.json ? JSON.stringify(result.json, null, 2) : result.text)
    return 0
  } catch (err) {
    return refuse(io, 'gatehouse', messageOf(err))
  }
}

async function run(
  { command, args }: { command: Command; args: readonly string[] },
  { flags }: Parsed,
  argv: readonly string[],
  env: CliEnvironment,
  io: CliIo,
): Promise<number> {
  if (env.inServer && command.notBesideServer !== undefined) return refuse(io, 'gatehouse', command.notBesideServer)
  let services: CliServices | undefined
  try {
    services = await env.open()
    // Every command migrates first, as start-up does; inside the server, its start-up has.
    const migrated = env.inServer ? [] : await services.maintenance.migrate()
    const result = await command.run({ args, flags, services, migrated })
    io.out(flags.json ? JSON.stringify(result.json, null, 2) : result.text)
    return 0
  } catch (err) {
    // The embedded database is the running server's: it runs the command, if it answers.
    const forwarded = err instanceof DataDirInUseError && env.forward ? await env.forward(argv, io) : undefined
    if (forwarded !== undefined) return forwarded
    // A refused configuration (no SECRET_KEY with DATABASE_URL) is not the command's failure.
    return refuse(io, err instanceof SecretKeyError ? 'gatehouse' : (command.failure ?? 'gatehouse'), messageOf(err))
  } finally {
    await services?.close().catch(() => {})
  }
}
