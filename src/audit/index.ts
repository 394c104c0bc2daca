/*
 * The audit log's door (docs/architecture.md "Doors"): who acts (a route's `actorOf`, the
 * command line's `COMMAND_LINE`) and the event vocabulary the audit pages show
 * (docs/decisions/009-audit-log.md).
 */
export { type Actor, COMMAND_LINE } from './actor.js'
export { AUDIT_EVENTS, describeAuditEvent, isAuditEventName } from './audit-log.js'
