import type { Db } from '../db/connect.js'

/*
 * Authenticator-app (TOTP) secrets, sealed (src/lib/sealed-box.ts): the shown, unconfirmed one
 * (totp_enrolments, expiring) and the confirmed one with the last time step it accepted
 * (totp_secrets; migrations/0010_second_factor.ts). Every change to totp_secrets is followed by
 * refreshSecondFactor (src/repositories/second-factor.ts) in the same transaction.
 */

/** A new enrolment replaces the account's previous unconfirmed one. */
export async function putTotpEnrolment(db: Db, userId: string, secretSealed: string, expiresAt: Date): Promise<void> {
  await db
    .insertInto('totp_enrolments')
    .values({ user_id: userId, secret_sealed: secretSealed, expires_at: expiresAt })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ secret_sealed: secretSealed, expires_at: expiresAt }))
    .execute()
}

/** The unexpired enrolment's sealed secret. */
export async function findTotpEnrolment(db: Db, userId: string, now: Date): Promise<string | undefined> {
  const row = await db
    .selectFrom('totp_enrolments')
    .select('secret_sealed')
    .where('user_id', '=', userId)
    .where('expires_at', '>', now)
    .executeTakeFirst()
  return row?.secret_sealed
}

/** Ends the enrolment; true when this call ended it (of two confirmations, one wins). */
export async function deleteTotpEnrolment(db: Db, userId: string): Promise<boolean> {
  const result = await db.deleteFrom('totp_enrolments').where('user_id', '=', userId).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

/** Stores the confirmed secret; false when the account has one already. */
export async function insertTotpSecret(db: Db, userId: string, secretSealed: string, lastStep: number, now: Date): Promise<boolean> {
  const result = await db
    .insertInto('totp_secrets')
    .values({ user_id: userId, secret_sealed: secretSealed, last_step: lastStep, created_at: now })
    .onConflict((oc) => oc.column('user_id').doNothing())
    .executeTakeFirst()
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0
}

export function findTotpSecret(db: Db, userId: string): Promise<{ secret_sealed: string } | undefined> {
  return db.selectFrom('totp_secrets').select('secret_sealed').where('user_id', '=', userId).executeTakeFirst()
}

/**
 * Accepts time step `step` once: one UPDATE that succeeds only while the last accepted step is
 * older, so a code, or an older one, replayed or raced is refused (RFC 6238 5.2).
 */
export async function advanceTotpStep(db: Db, userId: string, step: number): Promise<boolean> {
  const result = await db
    .updateTable('totp_secrets')
    .set({ last_step: step })
    .where('user_id', '=', userId)
    .where('last_step', '<', String(step))
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

export async function deleteTotpSecret(db: Db, userId: string): Promise<boolean> {
  const result = await db.deleteFrom('totp_secrets').where('user_id', '=', userId).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}
