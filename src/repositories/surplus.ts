import type { QueryCreator } from 'kysely'
import type { Database } from '../db/schema.js'

/** The tables whose rows are capped per owner by deleting the oldest in the inserting statement. */
type Capped =
  | { table: 'pending_authorizations'; owner: 'user_id' }
  | { table: 'pushed_authorization_requests'; owner: 'application_id' }
  | { table: 'device_authorizations'; owner: 'application_id' }

/**
 * The common table expression that deletes an owner's oldest rows beyond the newest `keep - 1`,
 * so that the row inserted by the same statement makes `keep` (QUOTAS of src/limits/policy.ts).
 * It takes only rows no other transaction holds (`skip locked`): two inserts of one owner at
 * once, each deleting the surplus it read, would otherwise wait on each other's rows and
 * deadlock. A row skipped is another statement's to delete, so the cap may be passed by the
 * statements in flight and is kept again by the next one; a kept row is never deleted, since
 * skipping rows only moves the offset towards older ones
 * (test/postgres/held-request-trim-race.test.ts).
 */
export function deleteSurplus({ table, owner }: Capped, ownerId: string, keep: number) {
  return (q: QueryCreator<Database>) =>
    q.deleteFrom(table).where('id', 'in', (s) =>
      s
        .selectFrom(table)
        .select('id')
        .where(owner, '=', ownerId)
        .orderBy('created_at', 'desc')
        .offset(keep - 1)
        .forUpdate()
        .skipLocked(),
    )
}
