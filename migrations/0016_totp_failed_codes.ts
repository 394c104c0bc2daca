import type { Kysely } from 'kysely'

/*
 * The long-term bound on guessing the authenticator app's codes (docs/decisions/011-second-factor.md,
 * "Guessing the second step"): wrong codes typed since the account's last proven second factor.
 * At SECOND_FACTOR_LOCK_AFTER the app's codes are refused until a recovery code or a passkey
 * proves the owner. On the secret's own row, so turning the app off, the operator's reset or a
 * new set-up starts again from zero; it grows no table.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('totp_secrets')
    .addColumn('failed_codes', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('totp_secrets').dropColumn('failed_codes').execute()
}
