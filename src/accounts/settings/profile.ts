import type { AuditTrail } from '../../audit/audit-log.js'
import { hasControlCharacter } from '../../lib/text.js'
import { findDisplayName, setDisplayName } from '../../repositories/profiles.js'
import type { AccountContext } from '../context.js'

/*
 * The profile an application sees with the `profile` scope (OpenID Connect Core 5.4): an
 * optional display name, set on the Account page. `name` is the user's own words, never checked
 * against anything; it is bounded and has no control characters, so it stays one line wherever
 * an application shows it.
 */

export const DISPLAY_NAME_MAX = 100

export type DisplayNameResult = { kind: 'saved'; changed: boolean } | { kind: 'invalid'; message: string }

/** The display name as typed: trimmed; empty removes it. */
export function parseDisplayName(value: string): { ok: true; name: string | null } | { ok: false; message: string } {
  const name = value.trim()
  if (name.length > DISPLAY_NAME_MAX) return { ok: false, message: `The display name must be at most ${DISPLAY_NAME_MAX} characters.` }
  if (hasControlCharacter(name)) return { ok: false, message: 'The display name must not contain control characters.' }
  return { ok: true, name: name === '' ? null : name }
}

export function displayNameOf(ctx: AccountContext, userId: string): Promise<string | null> {
  return findDisplayName(ctx.db, userId)
}

export async function changeDisplayName(ctx: AccountContext, userId: string, value: string, audit: AuditTrail): Promise<DisplayNameResult> {
  const parsed = parseDisplayName(value)
  if (!parsed.ok) return { kind: 'invalid', message: parsed.message }
  const changed = await setDisplayName(ctx.db, userId, parsed.name, ctx.clock())
  if (changed) await audit.record({ event: 'user.display_name_changed', userId })
  return { kind: 'saved', changed }
}
