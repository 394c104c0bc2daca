import type { MigrationResult } from 'kysely'
import type { MailSettings } from '../mail/index.js'
import type { Services } from '../services.js'

/*
 * What every command of the command line is (docs/operating/command-line.md): one small handler
 * that reads its arguments, makes one call into the services' operator or maintenance use cases,
 * and says what happened as text for people and as JSON for scripts; and the helpers they share.
 */

export class UsageError extends Error {
  override name = 'UsageError'
}

export type Flags = {
  search?: string
  page?: string
  app?: string
  user?: string
  scopes?: string
  to?: string
  last?: boolean
  /** `apps resources`: identifiers to declare and to remove (each flag may be repeated), and the token lifetime. */
  add?: string[]
  remove?: string[]
  ttl?: string
}

export interface Output {
  text: string
  json: unknown
}

/** What a handler is given: the words after its command's name, the options, and the services. */
export interface Invocation {
  args: readonly string[]
  flags: Flags
  services: Pick<Services, 'operator' | 'maintenance' | 'identity' | 'scopes'>
  /** The migrations the command line applied before this command (every command migrates first). */
  migrated: readonly MigrationResult[]
}

export interface Command {
  /** How many words the command takes after its name; more is a usage error. */
  arity: number
  run(call: Invocation): Promise<Output>
  /** A command that reads files only (the outbox): run without opening the database, which the server may hold. */
  offline?: (call: { flags: Flags; mail: Pick<MailSettings, 'smtpUrl' | 'outboxDir'> }) => Promise<Output>
  /**
   * Why the command is refused when sent to the running embedded server (src/cli/control-server.ts),
   * for one that needs the database to itself; unset, it runs there as it runs alone.
   */
  notBesideServer?: string
  /** How a failure is introduced instead of "gatehouse:" (`npm run migrate` and `npm run janitor` have always said so). */
  failure?: string
}

export function page(flags: Flags): number {
  if (flags.page === undefined) return 1
  const n = Number(flags.page)
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError('--page must be a whole number from 1')
  return n
}

export function argument(args: readonly string[], index: number, what: string): string {
  const value = args[index]
  if (value === undefined || value.trim() === '') throw new UsageError(`missing ${what}`)
  return value
}

export function done(text: string, json: Record<string, unknown>): Output {
  return { text, json: { ok: true, ...json } }
}

/**
 * What a switch command did, in plain word order: "X is now verified.", "X is already verified.",
 * "X is no longer verified.", "X is not verified." (the last when there was nothing to remove).
 */
export function stateChange(subject: string, on: boolean, changed: boolean, state: string): string {
  if (on) return `${subject} is ${changed ? 'now' : 'already'} ${state}.`
  return `${subject} is ${changed ? 'no longer' : 'not'} ${state}.`
}
