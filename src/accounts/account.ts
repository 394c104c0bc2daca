import type { Actor } from '../audit/actor.js'
import { hasControlCharacter } from '../lib/text.js'

/** The logged-in user acting on their own account. */
export interface Account extends Actor {
  readonly userId: string
}

/** A current password that cannot be right is refused without counting against the reauthentication limit. */
export const passwordCannotBeRight = (password: string): boolean =>
  password === '' || password.length > 256 || hasControlCharacter(password)
