import type { AuditLog, AuditTrail } from './audit-log.js'

/**
 * Who asks a use case to act, for the audit log (docs/operating/admin.md "Audit log"): the logged-in user (null:
 * nobody) and the client's address as the HTTP edge works it out (src/http/audit.ts), or the
 * command line, which has neither and says so in each event's detail.
 */
export interface Actor {
  readonly userId: string | null
  readonly address: string | null
  readonly commandLine?: true
}

export const COMMAND_LINE: Actor = Object.freeze({ userId: null, address: null, commandLine: true })

/** The recorder bound to the actor: what each use case records through once its change has committed. */
export function trailOf(audit: AuditLog, actor: Actor): AuditTrail {
  if (!actor.commandLine) return audit.trail(actor.userId, actor.address)
  return {
    record: (event) =>
      audit.record({ ...event, detail: event.detail ? `${event.detail}; from the command line` : 'From the command line' }, null, null),
  }
}
