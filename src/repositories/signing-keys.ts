import { sql } from 'kysely'
import type { Db } from '../db/connect.js'
import type { SigningAlg, SigningKeysTable } from '../db/schema.js'
import type { Selectable } from 'kysely'

export type SigningKeyRow = Selectable<SigningKeysTable>

/** The keys still published (not past not_after), oldest first: the JWKS and the signers read these. */
export function listPublishedKeys(db: Db, now: Date): Promise<SigningKeyRow[]> {
  return db
    .selectFrom('signing_keys')
    .selectAll()
    .where((eb) => eb.or([eb('not_after', 'is', null), eb('not_after', '>', now)]))
    .orderBy('not_before')
    .orderBy('created_at')
    .execute()
}

/** Every key, retired ones too, newest first (`gatehouse keys list`). */
export function listAllKeys(db: Db): Promise<SigningKeyRow[]> {
  return db.selectFrom('signing_keys').selectAll().orderBy('not_before', 'desc').orderBy('created_at', 'desc').execute()
}

/**
 * Runs `work` in a transaction holding the signing keys' advisory lock, so two processes that
 * both find no key for an algorithm (or rotate at once) create one key, not two.
 */
export function withSigningKeyLock<T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    // 4712120002: a key no other code uses (the janitor's is 4712120001).
    await sql`select pg_advisory_xact_lock(4712120002)`.execute(trx)
    return work(trx)
  })
}

/** The key of `alg` that signs at `now`: the latest whose not_before has come and that is not retired. */
export function findSigningKey(db: Db, alg: SigningAlg, now: Date): Promise<SigningKeyRow | undefined> {
  return db
    .selectFrom('signing_keys')
    .selectAll()
    .where('alg', '=', alg)
    .where('not_before', '<=', now)
    .where((eb) => eb.or([eb('retired_at', 'is', null), eb('retired_at', '>', now)]))
    .orderBy('not_before', 'desc')
    .limit(1)
    .executeTakeFirst()
}

export async function insertSigningKey(db: Db, row: SigningKeyRow): Promise<void> {
  await db.insertInto('signing_keys').values(row).execute()
}

/**
 * Retires the keys of `alg` that sign now or would (not yet retired): they stop signing at
 * `retiredAt` and leave the JWKS at `notAfter`. Returns their kids.
 */
export async function retireKeys(db: Db, alg: SigningAlg, retiredAt: Date, notAfter: Date): Promise<string[]> {
  const rows = await db
    .updateTable('signing_keys')
    .set({ retired_at: retiredAt, not_after: notAfter })
    .where('alg', '=', alg)
    .where('retired_at', 'is', null)
    .returning('kid')
    .execute()
  return rows.map((r) => r.kid)
}

/** The algorithms that have an unretired key: what a rotation renews. */
export async function algorithmsInUse(db: Db): Promise<SigningAlg[]> {
  const rows = await db.selectFrom('signing_keys').select('alg').distinct().where('retired_at', 'is', null).execute()
  return rows.map((r) => r.alg)
}
