import { APP_COMMANDS } from './app-commands.js'
import { type Command, UsageError } from './command.js'
import { MAINTENANCE_COMMANDS } from './maintenance-commands.js'
import { USER_COMMANDS } from './user-commands.js'

/*
 * The command line's commands (docs/operating/command-line.md), one small handler each
 * (src/cli/command.ts), in three tables by what they act on. A new command is one more entry in
 * its table (and a line of USAGE in output.ts).
 */

export const COMMANDS: Readonly<Record<string, Command>> = { ...USER_COMMANDS, ...APP_COMMANDS, ...MAINTENANCE_COMMANDS }
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
