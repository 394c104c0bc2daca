import { type Kysely, sql } from 'kysely'

/*
 * An audit event's area may have an underscore, as `refresh_token.reused` does (a retired refresh
 * token presented again: its family revoked, RFC 9700 §4.14.2; docs/expiring-tokens.md). The
 * shape is otherwise that of migrations/0006_audit_events.ts.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('audit_events').dropConstraint('audit_events_event_format').execute()
  await db.schema
    .alterTable('audit_events')
    .addCheckConstraint('audit_events_event_format', sql`event ~ '^[a-z_]+\\.[a-z_]+$' and char_length(event) <= 64`)
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db
    .deleteFrom('audit_events')
    .where(sql<boolean>`event !~ '^[a-z]+\\.[a-z_]+$'`)
    .execute()
  await db.schema.alterTable('audit_events').dropConstraint('audit_events_event_format').execute()
  await db.schema
    .alterTable('audit_events')
    .addCheckConstraint('audit_events_event_format', sql`event ~ '^[a-z]+\\.[a-z_]+$' and char_length(event) <= 64`)
    .execute()
}
