import type { Db } from '../db/connect.js'
import type { Database } from '../db/schema.js'
import type { Insertable, Selectable } from 'kysely'

/* Passkeys (WebAuthn credentials) and the challenges handed out for them (migrations/0010_second_factor.ts). */

export type PasskeyRow = Selectable<Database['passkeys']>
export type WebauthnChallengeRow = Selectable<Database['webauthn_challenges']>

/** The account's passkeys, oldest first. */
export function listPasskeysOfUser(db: Db, userId: string): Promise<PasskeyRow[]> {
  return db.selectFrom('passkeys').selectAll().where('user_id', '=', userId).orderBy('created_at').orderBy('id').execute()
}

export async function countPasskeysOfUser(db: Db, userId: string): Promise<number> {
  const row = await db
    .selectFrom('passkeys')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

export function findPasskeyById(db: Db, id: string): Promise<PasskeyRow | undefined> {
  return db.selectFrom('passkeys').selectAll().where('id', '=', id).executeTakeFirst()
}

/** False when a passkey with this credential id exists already (on this account or another). */
export async function insertPasskey(db: Db, row: Insertable<Database['passkeys']>): Promise<boolean> {
  const inserted = await db
    .insertInto('passkeys')
    .values(row)
    .onConflict((oc) => oc.column('id').doNothing())
    .returning('id')
    .executeTakeFirst()
  return inserted !== undefined
}

/** True when the account had that passkey. */
export async function renamePasskey(db: Db, userId: string, id: string, name: string): Promise<boolean> {
  const row = await db
    .updateTable('passkeys')
    .set({ name })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .returning('id')
    .executeTakeFirst()
  return row !== undefined
}

/** The removed passkey's name, or undefined when the account had no such passkey. */
export async function deletePasskey(db: Db, userId: string, id: string): Promise<string | undefined> {
  const row = await db.deleteFrom('passkeys').where('id', '=', id).where('user_id', '=', userId).returning('name').executeTakeFirst()
  return row?.name
}

/**
 * Records a use with its signature counter, only when the counter may follow the stored one
 * (WebAuthn Level 3, 7.2 step 22): greater than it, or 0 after 0 (an authenticator that does not
 * count). Compared and written in one statement, so a counter is never lowered and two assertions
 * with one counter cannot both pass. Also the backup state the authenticator reported. True when
 * it was recorded.
 */
export async function recordPasskeyUse(db: Db, use: { id: string; counter: number; backedUp: boolean; at: Date }): Promise<boolean> {
  const row = await db
    .updateTable('passkeys')
    .set({ counter: use.counter, backed_up: use.backedUp, last_used_at: use.at })
    .where('id', '=', use.id)
    // A received 0 follows only a stored 0; any other counter must be greater than the stored one.
    .where('counter', use.counter === 0 ? '=' : '<', String(use.counter))
    .returning('id')
    .executeTakeFirst()
  return row !== undefined
}

export async function insertWebauthnChallenge(db: Db, row: Insertable<Database['webauthn_challenges']>): Promise<void> {
  await db.insertInto('webauthn_challenges').values(row).execute()
}

/** Deletes and returns a challenge: whatever it proves, it is used once. The janitor deletes those never taken. */
export function takeWebauthnChallenge(db: Db, idHash: string): Promise<WebauthnChallengeRow | undefined> {
  return db.deleteFrom('webauthn_challenges').where('id_hash', '=', idHash).returningAll().executeTakeFirst()
}
