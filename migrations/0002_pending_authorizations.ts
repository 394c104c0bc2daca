import { type Kysely, sql } from 'kysely'

/*
 * Authorization requests waiting for the user's answer on the consent page (DESIGN
 * "/oauth/authorize" 6): the validated request is kept here, and the consent form carries only
 * its id, so what the page showed is exactly what can be issued. A row lives 10 minutes and is
 * deleted when answered; each user keeps at most a handful (src/repositories/pending-authorizations.ts).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('pending_authorizations')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('application_id', 'uuid', (c) => c.notNull().references('applications.id').onDelete('cascade'))
    .addColumn('response_type', 'text', (c) => c.notNull())
    // As sent (null when omitted), so the code is bound to it as RFC 6749 4.1.3 requires.
    .addColumn('redirect_uri', 'text')
    .addColumn('scopes', sql`text[]`, (c) => c.notNull())
    .addColumn('state', 'text')
    .addColumn('code_challenge', 'text')
    .addColumn('code_challenge_method', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addCheckConstraint('pending_authorizations_response_type', sql`response_type in ('code', 'token')`)
    .execute()
  await db.schema.createIndex('pending_authorizations_user_id_idx').on('pending_authorizations').column('user_id').execute()
  await db.schema.createIndex('pending_authorizations_application_id_idx').on('pending_authorizations').column('application_id').execute()
  await db.schema.createIndex('pending_authorizations_expires_at_idx').on('pending_authorizations').column('expires_at').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('pending_authorizations').execute()
}
