import { type Kysely, sql } from 'kysely'

/*
 * The audit log (docs/operating/admin.md "Audit log"): one row per security event, written off the token and
 * introspection paths, never holding a secret, and deleted by the janitor AUDIT_RETENTION_DAYS
 * after it happened.
 *
 * `user_id` is the account the event concerns (the one whose Security log shows it) and
 * `actor_id` who did it; both are ON DELETE SET NULL, not CASCADE: deleting an account must not
 * erase what happened to it or what it did (an attacker who took an account over could otherwise
 * wipe the trail by deleting it), and the rows go at the end of the retention period like any
 * other. The application concerned is a snapshot (`client_id`, `application_name`) without a
 * foreign key, since "application deleted" outlives the application.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('audit_events')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('occurred_at', 'timestamptz', (c) => c.notNull())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('user_id', 'uuid', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('actor_id', 'uuid', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('client_id', 'text')
    .addColumn('application_name', 'text')
    .addColumn('client_address', 'text')
    .addColumn('detail', 'text', (c) => c.notNull().defaultTo(''))
    // `area.what_happened`: user.logged_in, application.deleted, operator.user_suspended, …
    .addCheckConstraint('audit_events_event_format', sql`event ~ '^[a-z]+\\.[a-z_]+$' and char_length(event) <= 64`)
    .addCheckConstraint(
      'audit_events_bounded',
      sql`char_length(detail) <= 300 and char_length(application_name) <= 200 and char_length(client_id) <= 200 and char_length(client_address) <= 64`,
    )
    .execute()
  // The janitor's cut-off and the operator's unfiltered view, newest first.
  await db.schema.createIndex('audit_events_occurred_at_idx').on('audit_events').columns(['occurred_at', 'id']).execute()
  // A user's own Security log, newest first.
  await db.schema.createIndex('audit_events_user_idx').on('audit_events').columns(['user_id', 'occurred_at', 'id']).execute()
  // The operator's filters; actor_id also keeps ON DELETE SET NULL from scanning the table.
  await db.schema
    .createIndex('audit_events_actor_idx')
    .on('audit_events')
    .columns(['actor_id', 'occurred_at'])
    .where('actor_id', 'is not', null)
    .execute()
  await db.schema
    .createIndex('audit_events_client_idx')
    .on('audit_events')
    .columns(['client_id', 'occurred_at'])
    .where('client_id', 'is not', null)
    .execute()
  await db.schema.createIndex('audit_events_event_idx').on('audit_events').columns(['event', 'occurred_at']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('audit_events').execute()
}
