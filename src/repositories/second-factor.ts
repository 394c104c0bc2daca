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
