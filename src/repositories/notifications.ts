import { sql } from 'kysely'
import type { Db } from '../db/connect.js'

/**
 * Queues NOTIFYs in the caller's transaction (sent at once outside one): Postgres delivers them
 * when, and only if, the transaction commits.
 */
export async function notify(db: Db, channel: string, payloads: readonly string[]): Promise<void> {
  if (payloads.length === 1) await sql`select pg_notify(${channel}, ${payloads[0]})`.execute(db)
  // Many notices (an application's digests) in one round trip. Their order among themselves
  // does not matter; notices from separate statements keep the order of the statements.
  else if (payloads.length > 1) await sql`select pg_notify(${channel}, p) from unnest(${[...payloads]}::text[]) as p`.execute(db)
}
