import { sql } from 'kysely'
import type { Db } from '../db/connect.js'

/**
 * users.second_factor is true when the account has a confirmed TOTP secret or a passkey
 * (migrations/0010_second_factor.ts). Every change to those tables calls this in the same
 * transaction, so the flag the session read returns can never disagree with the tables.
 * Whether the flag changed: true when it was set or cleared by this call.
 */
export async function refreshSecondFactor(db: Db, userId: string): Promise<boolean> {
  const result = await sql`
    update users set second_factor = (
      exists (select 1 from totp_secrets where user_id = ${userId})
      or exists (select 1 from passkeys where user_id = ${userId})
    )
    where id = ${userId} and second_factor is distinct from (
      exists (select 1 from totp_secrets where user_id = ${userId})
      or exists (select 1 from passkeys where user_id = ${userId})
    )`.execute(db)
  return Number(result.numAffectedRows ?? 0) > 0
}

/** What second factor an account has, as the admin user page shows it. */
export interface SecondFactorSummary {
  totp: boolean
  passkeys: number
  /** Recovery codes not used yet. */
  recoveryCodes: number
}

export async function secondFactorSummary(db: Db, userId: string): Promise<SecondFactorSummary> {
  const { rows } = await sql<SecondFactorSummary>`
    select
      exists (select 1 from totp_secrets where user_id = ${userId}) as totp,
      (select count(*)::int from passkeys where user_id = ${userId}) as passkeys,
      (select count(*)::int from recovery_codes where user_id = ${userId}) as "recoveryCodes"`.execute(db)
  return rows[0] ?? { totp: false, passkeys: 0, recoveryCodes: 0 }
}

/**
 * Every second-factor row of the account: its TOTP secret and unconfirmed enrolment, recovery
 * codes, passkeys, WebAuthn challenges and pending log-ins (a password step passed waits for a
 * factor that is gone). How many rows went, per table. Callers refresh users.second_factor in
 * the same transaction (refreshSecondFactor).
 */
export async function deleteSecondFactors(db: Db, userId: string): Promise<Record<string, number>> {
  const removed: Record<string, number> = {}
  for (const table of ['totp_secrets', 'totp_enrolments', 'recovery_codes', 'passkeys', 'webauthn_challenges', 'pending_logins'] as const) {
    const result = await db.deleteFrom(table).where('user_id', '=', userId).executeTakeFirst()
    removed[table] = Number(result.numDeletedRows)
  }
  return removed
}
