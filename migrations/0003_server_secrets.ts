import type { Kysely } from 'kysely'

/*
 * Secrets Gatehouse makes for itself: the first process that needs one generates it and every
 * other process reads the same row, so a first run needs no configuration and all processes
 * behind a load balancer agree. Today one row, `device-cookie` (the HMAC key of the log-in
 * device cookies, src/accounts/login/device-cookies.ts). Rows never expire: deleting one signs every
 * browser out of its device cookie.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('server_secrets')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('server_secrets').execute()
}
