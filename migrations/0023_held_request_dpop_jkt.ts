import type { Kysely } from 'kysely'

/*
 * pending_authorizations.dpop_jkt: a request held for the consent page keeps the `dpop_jkt` it
 * was sent with (RFC 9449 §10), so the code the approval issues is bound to that key as one
 * issued under remembered consent is (docs/dpop.md "Binding the code").
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('pending_authorizations').addColumn('dpop_jkt', 'text').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('pending_authorizations').dropColumn('dpop_jkt').execute()
}
