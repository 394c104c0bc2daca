import type { Db } from '../db/connect.js'

/**
 * The secret stored under `name`, storing `candidate` first if there is none. One statement:
 * when two processes race, the conflicting insert updates nothing that matters and returns the
 * row that won, so both use the same secret.
 */
export async function secretNamed(db: Db, name: string, candidate: string, now: Date): Promise<string> {
  const row = await db
    .insertInto('server_secrets')
    .values({ name, secret: candidate, created_at: now })
    .onConflict((oc) => oc.column('name').doUpdateSet((eb) => ({ name: eb.ref('excluded.name') })))
    .returning('secret')
    .executeTakeFirstOrThrow()
  return row.secret
}
