import { type Kysely, sql } from 'kysely'

/*
 * The device authorization grant (RFC 8628; docs/decisions/020-device-codes.md). An owner turns
 * it on per application. A device authorization lives from the device's request until its
 * device code is exchanged once or it expires; the janitor deletes expired rows. Neither code is
 * stored in plain: the device code as its SHA-256, the user code as the SHA-256 of its
 * normalised form (RFC 8628 5.1, 5.2).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('applications')
    .addColumn('allow_device_flow', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute()
  await db.schema
    .createTable('device_authorizations')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('device_code_hash', 'text', (c) => c.notNull().unique())
    .addColumn('user_code_hash', 'text', (c) => c.notNull().unique())
    .addColumn('application_id', 'uuid', (c) => c.notNull().references('applications.id').onDelete('cascade'))
    .addColumn('scopes', sql`text[]`, (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('pending')
        .check(sql`status in ('pending', 'approved', 'denied')`),
    )
    .addColumn('user_id', 'uuid', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('last_polled_at', 'timestamptz')
    .addColumn('interval_seconds', 'integer', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('device_authorizations_expires_at_idx').on('device_authorizations').column('expires_at').execute()
  await db.schema
    .createIndex('device_authorizations_application_idx')
    .on('device_authorizations')
    .columns(['application_id', 'created_at'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('device_authorizations').execute()
  await db.schema.alterTable('applications').dropColumn('allow_device_flow').execute()
}
