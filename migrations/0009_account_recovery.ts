import { type Kysely, sql } from 'kysely'

/*
 * Every recovery closes the other doors (docs/decisions/010-account-recovery.md).
 * - users.credential_version: counts the recoveries of the account (password reset or change,
 *   "Log out of all other sessions", an operator's suspension, the first proof of its address).
 *   Device cookies are signed over it (src/accounts/login/device-cookies.ts), so each recovery voids
 *   every device cookie issued before it. Existing cookies were signed at version 0 and stay
 *   valid until the account's first recovery.
 * - email_tokens purpose 'cancel-email-change': the link mailed to the old address when a change
 *   of address is asked, which cancels the change.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('users')
    .addColumn('credential_version', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema.alterTable('email_tokens').dropConstraint('email_tokens_purpose').execute()
  await db.schema
    .alterTable('email_tokens')
    .addCheckConstraint('email_tokens_purpose', sql`purpose in ('verify-email', 'reset-password', 'change-email', 'cancel-email-change')`)
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`delete from email_tokens where purpose = 'cancel-email-change'`.execute(db)
  await db.schema.alterTable('email_tokens').dropConstraint('email_tokens_purpose').execute()
  await db.schema
    .alterTable('email_tokens')
    .addCheckConstraint('email_tokens_purpose', sql`purpose in ('verify-email', 'reset-password', 'change-email')`)
    .execute()
  await db.schema.alterTable('users').dropColumn('credential_version').execute()
}
